-- claim_next_no_attempts: benchmark baseline "c", claim_next without attempt history. The same
--   cand and todo update as todos/sql/claim_next.sql (cand and the claim predicate are spliced
--   from todos/sql/_claim_next_cand.sql and _claimable.sql, so they cannot drift), without the
--   closed, pruned, opened and prior arms. The queue's limits are probed as the product's claim
--   of a queue that sets none probes them (_queue_unlimited.sql, the bench's queue). attempts_total
--   still counts, so the todo row written is the same width. It announces the claim as the
--   product does (todos/sql/_notify_changed.sql): the change feed is not attempt history, so the
--   ratio b/c prices the attempt arms alone.
-- params: endpoint_id, queues (text[]), owner, ttl_seconds; claim_next's other parameters are
--   passed and ignored.
-- returns: the todo, prior_state, attempt_seq, prior_attempts ('[]'), the shape claim_next has;
--   no row when nothing is claimable.
-- Uses index: as claim_next (todos_claim_queue_idx, per requested queue).
WITH @{claim_next_cand},
upd AS (
UPDATE todos t
   SET state = 'claimed', owner = %(owner)s,
       lease_expires_at = now() + %(ttl_seconds)s * interval '1 second',
       attempt = t.attempt + 1, attempts_total = t.attempts_total + 1,
       claimed_at = now(), next_retry_at = NULL, finished_at = NULL, updated_at = now()
  FROM cand
 WHERE t.id = cand.cand_id
RETURNING t.*, cand.prior_state, t.attempts_total AS attempt_seq, '[]'::jsonb AS prior_attempts
)
SELECT upd.*, @{notify_changed} AS notified FROM upd
