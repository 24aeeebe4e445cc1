-- claim_next_cand: claim_next's `cand` (cand_id, prior_state, prior_total) on one queue: its
-- claimable rows in claim order (priority, highest first, then age) through
-- todos_claim_queue_idx, locked as read, SKIP LOCKED; the first it can lock is the claim. The
-- index has the queue before priority and created_at, so the scan reads this queue's rows
-- only, whatever the endpoint's other queues hold. Also the benchmark's
-- baseline's (bench/sql/claim_next_no_attempts.sql), so the two cannot drift. A paused queue
-- (_queue_open.sql, one probe before the scan) gives nothing; so does a queue at its limits
-- (_queue_limits.sql, over the statement's queue_limited).
cand AS (
    SELECT t.id AS cand_id, t.state AS prior_state, t.attempts_total AS prior_total
      FROM todos t
     WHERE t.endpoint_id = %(endpoint_id)s AND t.queue = %(queue)s
       AND (t.assignee IS NULL OR t.assignee = %(owner)s)
       AND @{claimable}
       AND @{queue_open}
       AND @{queue_limits}
     ORDER BY t.priority DESC, t.created_at, t.id
     LIMIT 1
       FOR UPDATE SKIP LOCKED
)
