-- queue_depths: per live endpoint and queue, how many todos wait to be claimed (pending) and the
--   creation time of the oldest, for the queue gauges (todos/gauges.py). Not owner-scoped: it
--   feeds /metrics. Run at most once per SWITCHBOARD_QUEUE_METRICS_SECONDS per process, never
--   per scrape; the busiest `limit` queues are kept, so the series stay bounded.
-- params: limit
-- returns: endpoint (slug), queue, depth, oldest_epoch (the oldest pending todo's created_at, as
--   seconds since the epoch: the gauge ages it at each scrape).
-- Uses index: todos_board_state_idx (endpoint_id, state, …), one range of pending entries per
--   live endpoint; the queue is read from the row.
SELECT e.slug AS endpoint, t.queue, count(*) AS depth,
       EXTRACT(EPOCH FROM min(t.created_at))::float8 AS oldest_epoch
  FROM endpoints e
  JOIN todos t ON t.endpoint_id = e.id AND t.state = 'pending'
 WHERE e.revoked_at IS NULL
 GROUP BY e.slug, t.queue
 ORDER BY count(*) DESC, e.slug, t.queue
 LIMIT %(limit)s
