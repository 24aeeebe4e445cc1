-- queue_open: the queue @{pause_queue} of the endpoint @{pause_endpoint} is not paused (no open
-- row in queue_pauses). What an agent's claim and a ring require: a paused queue gives no work
-- and rings nobody; the leases already held on it run on (nothing else checks it). The
-- statement supplies both expressions: claim_next's parameters, claim_next_queues' q.queue, or
-- the todo's own columns.
-- Uses index: queue_pauses_open_idx (endpoint_id, queue) WHERE resumed_at IS NULL: one probe
-- (uncorrelated in claim_next, where the plan runs it once, ahead of the claim index scan).
NOT EXISTS (SELECT 1 FROM queue_pauses qp
             WHERE qp.endpoint_id = @{pause_endpoint} AND qp.queue = @{pause_queue}
               AND qp.resumed_at IS NULL)
