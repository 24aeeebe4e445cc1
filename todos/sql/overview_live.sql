-- overview_live: the live depth of the scope's queues, read when the page is: per endpoint in
--   scope and queue, the todos pending and in flight now, and the oldest pending todo's
--   creation; and each queue's open pause, with who paused it (an actor's spelling, named by
--   switchboard/actors.py) or the budget's reason and end, so a paused queue says so on its row
--   (one with no unfinished todo too). The sweeper's samples (overview_sample.sql) are up to a pass old and a new
--   queue has none for its first 30 s; this read has no such lag. Bounded: at most `cap`
--   unfinished todos are read per endpoint (capped says the counts stopped there), so the
--   page costs the same however deep a queue is; an endpoint whose counts sum to `cap` was cut
--   there (todos/overview.py says so on the page).
-- params: the scope's (switchboard/scope.py, on endpoints e), cap
-- returns: endpoint_id, endpoint (slug), revoked, queue, pending, in_flight, oldest_pending_at,
--   paused_by (NULL: not paused), pause_reason, paused_until.
-- Uses index: todos_board_state_idx (endpoint_id, state, …) per endpoint and state, stopped at
--   `cap` rows; queue_pauses_open_idx (endpoint_id, queue) WHERE resumed_at IS NULL per
--   endpoint.
WITH eps AS (
    SELECT e.id, e.slug, e.revoked_at FROM endpoints e WHERE @{scope_endpoints}
),
live AS (
    SELECT eps.id AS endpoint_id, l.queue, l.pending, l.in_flight, l.oldest_pending_at
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
),
paused AS (
    SELECT p.endpoint_id, p.queue, p.paused_by, p.reason, p.until
      FROM eps
      JOIN queue_pauses p ON p.endpoint_id = eps.id AND p.resumed_at IS NULL
)
SELECT eps.id AS endpoint_id, eps.slug AS endpoint, eps.revoked_at IS NOT NULL AS revoked,
       coalesce(live.queue, paused.queue) AS queue, coalesce(live.pending, 0)::int AS pending,
       coalesce(live.in_flight, 0)::int AS in_flight, live.oldest_pending_at,
       paused.paused_by, paused.reason AS pause_reason,
       paused.until AS paused_until
  FROM live
  FULL JOIN paused ON paused.endpoint_id = live.endpoint_id AND paused.queue = live.queue
  JOIN eps ON eps.id = coalesce(live.endpoint_id, paused.endpoint_id)
 ORDER BY eps.slug, 4
