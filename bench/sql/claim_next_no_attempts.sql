-- claim_next_no_attempts: benchmark baseline "c", claim_next without attempt history. The same
--   cand and todo update as todos/sql/claim_next.sql (the claim predicate is spliced from
--   todos/sql/_claimable.sql, so it cannot drift), without the closed, pruned, opened and prior
--   arms. attempts_total still counts, so the todo row written is the same width.
-- params: endpoint_id, queues (text[]), owner, ttl_seconds; claim_next's other parameters are
--   passed and ignored.
-- returns: the todo, prior_state, attempt_seq, prior_attempts ('[]'), the shape claim_next has;
--   no row when nothing is claimable.
-- Uses index: todos_claimable_idx (endpoint_id, created_at), read in order, no sort.
WITH cand AS (
    SELECT t.id AS cand_id, t.state AS prior_state
      FROM todos t
     WHERE t.endpoint_id = %(endpoint_id)s AND t.queue = ANY(%(queues)s)
       AND (t.assignee IS NULL OR t.assignee = %(owner)s)
       AND @{claimable}
     ORDER BY t.created_at
     LIMIT 1
       FOR UPDATE SKIP LOCKED
)
UPDATE todos t
   SET state = 'claimed', owner = %(owner)s,
       lease_expires_at = now() + %(ttl_seconds)s * interval '1 second',
       attempt = t.attempt + 1, attempts_total = t.attempts_total + 1,
       claimed_at = now(), next_retry_at = NULL, finished_at = NULL, updated_at = now()
  FROM cand
 WHERE t.id = cand.cand_id
RETURNING t.*, cand.prior_state, t.attempts_total AS attempt_seq, '[]'::jsonb AS prior_attempts
