-- claim_next: claim the oldest claimable todo on the endpoint's queues and open its attempt;
--   a takeover of a lapsed lease closes the dead attempt lease_expired/requeued.
-- params: endpoint_id, queues (text[]), owner, ttl_seconds, claimer_kind, claimer_endpoint_id,
--   claimer_session, claimant, token_hash, attempts_cap, trace_id (bytea, 16 bytes, or NULL)
-- returns: the todo, prior_state, attempt_seq, prior_attempts (jsonb, newest first); no row
--   when nothing is claimable.
-- Uses index: todos_claimable_idx (endpoint_id, created_at, id), read in order, no sort.
WITH cand AS (
    SELECT t.id AS cand_id, t.state AS prior_state, t.attempts_total AS prior_total
      FROM todos t
     WHERE t.endpoint_id = %(endpoint_id)s AND t.queue = ANY(%(queues)s)
       AND (t.assignee IS NULL OR t.assignee = %(owner)s)
       AND @{claimable}
     ORDER BY t.created_at, t.id
     LIMIT 1
       FOR UPDATE SKIP LOCKED
),
@{claim_tail}
