-- overview_live: the live depth of the scope's queues, read when the page is: per endpoint in
--   scope and queue, the todos pending and in flight now, and the oldest pending todo's
--   creation. The sweeper's samples (overview_sample.sql) are up to a pass old and a new
--   queue has none for its first 30 s; this read has no such lag. Bounded: at most `cap`
--   unfinished todos are read per endpoint (capped says the counts stopped there), so the
--   page costs the same however deep a queue is; an endpoint whose counts sum to `cap` was cut
--   there (todos/overview.py says so on the page).
-- params: the scope's (switchboard/scope.py, on endpoints e), cap
-- returns: endpoint_id, endpoint (slug), revoked, queue, pending, in_flight, oldest_pending_at.
-- Uses index: todos_board_state_idx (endpoint_id, state, …) per endpoint and state, stopped at
--   `cap` rows.
WITH eps AS (
    SELECT e.id, e.slug, e.revoked_at FROM endpoints e WHERE @{scope_endpoints}
)
SELECT eps.id AS endpoint_id, eps.slug AS endpoint, eps.revoked_at IS NOT NULL AS revoked,
       l.queue, l.pending::int AS pending, l.in_flight::int AS in_flight, l.oldest_pending_at
  FROM eps
 CROSS JOIN LATERAL (
        SELECT x.queue, count(*) FILTER (WHERE x.state = 'pending') AS pending,
               count(*) FILTER (WHERE x.state <> 'pending') AS in_flight,
               min(x.created_at) FILTER (WHERE x.state = 'pending') AS oldest_pending_at
          FROM (SELECT t.queue, t.state, t.created_at
                  FROM todos t
                 WHERE t.endpoint_id = eps.id
                   AND t.state IN ('pending', 'claimed', 'input-required', 'auth-required')
                 LIMIT %(cap)s) x
         GROUP BY x.queue
       ) l
 ORDER BY eps.slug, l.queue
