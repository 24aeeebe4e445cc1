-- queue_limits: the queue @{pause_queue} is within its limits (queue_limited, _queue_limited.sql):
-- a rate token is available, and fewer than max_in_flight of its todos are held by agents (a
-- live lease, or paused for a human), counted only when the locked row is the snapshot's own
-- (`current`). A queue with no limit has no row in queue_limited: true without a count. Spliced
-- beside @{queue_open} in every agent's claim; the owning human's claim passes true, as it
-- passes a pause.
-- Uses index: todos_board_state_idx (endpoint_id, state, ...) for the count: the endpoint's
-- held todos only, few by the nature of a limit.
NOT EXISTS (SELECT 1 FROM queue_limited l
             WHERE l.queue = @{pause_queue}
               AND NOT ((l.claims_per_minute IS NULL OR l.tokens_now >= 1)
                        AND (l.max_in_flight IS NULL
                             OR (l.current
                                 AND (SELECT count(*) FROM todos held
                                       WHERE held.endpoint_id = l.endpoint_id
                                         AND held.state IN ('claimed', 'input-required',
                                                         'auth-required')
                                         AND held.queue = l.queue
                                         AND NOT (held.state = 'claimed'
                                                  AND held.lease_expires_at < now()))
                                     < l.max_in_flight))))
