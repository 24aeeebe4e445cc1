-- queue_depths: per live endpoint and queue, how many todos wait to be claimed (pending) and the
--   creation time of the oldest, for the queue gauges (todos/gauges.py). Not owner-scoped: it
--   feeds /metrics. Run at most once per SWITCHBOARD_QUEUE_METRICS_SECONDS per process, never
--   per scrape; the busiest `limit` queues are kept, so the series stay bounded.
-- Grouped on the todo's own columns first (a hash aggregate of narrow keys), the endpoint's slug
--   joined to the groups after: grouping by the slug sorted every pending row by a text key,
--   spilling to disk (575 ms against 260 ms for 200,000 pending todos on a loaded machine).
-- params: limit
-- returns: endpoint (slug), queue, depth, oldest_epoch (the oldest pending todo's created_at, as
--   seconds since the epoch: the gauge ages it at each scrape).
-- Uses index: todos_board_state_idx (endpoint_id, state, …) when pending todos are few among
--   many; a sequential scan when most todos are pending. Either way O(pending todos).
SELECT e.slug AS endpoint, d.queue, d.depth, d.oldest_epoch
  FROM (SELECT t.endpoint_id, t.queue, count(*) AS depth,
               EXTRACT(EPOCH FROM min(t.created_at))::float8 AS oldest_epoch
          FROM todos t
         WHERE t.state = 'pending'
         GROUP BY t.endpoint_id, t.queue) d
  JOIN endpoints e ON e.id = d.endpoint_id AND e.revoked_at IS NULL
 ORDER BY d.depth DESC, e.slug, d.queue
 LIMIT %(limit)s
