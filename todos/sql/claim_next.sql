-- claim_next: claim the first claimable todo on one of the endpoint's queues, highest priority
--   first, then oldest, and open its attempt; a takeover of a lapsed lease closes the dead
--   attempt lease_expired/requeued. Several queues: claim_next_queues.sql.
-- params: endpoint_id, queue, owner, ttl_seconds, claimer_kind, claimer_endpoint_id,
--   claimer_session, claimant, token_hash, attempts_cap, trace_id (bytea, 16 bytes, or NULL)
-- returns: the todo, prior_state, attempt_seq, prior_attempts (jsonb, newest first); no row
--   when nothing is claimable.
-- Uses index: todos_claim_queue_idx (endpoint_id, queue, priority DESC, created_at, id), read
--   in order, no sort, this queue's rows only (docs/decisions/0013-claim-per-queue.md,
--   docs/decisions/0027-time-and-cancellation.md).
WITH @{queue_limited},
@{claim_next_cand},
@{claim_tail}
