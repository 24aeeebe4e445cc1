-- claim: claim one todo by id under the same predicate as claim_next (agent: the endpoint's
--   scope; operator: the human's scope, claimer_kind 'owner'). Waits for the row lock, then
--   re-checks the predicate against the row as it stands. An agent's claim of a todo on a paused
--   queue is refused (@{queue_open}: _queue_open.sql on the todo's own queue), as claim_next
--   would not take it; the owning human's claim is not (lifecycle.OPERATOR_CLAIM passes true):
--   pausing stops the agents, not the human who paused. The queue's limits likewise
--   (@{queue_limits}, _queue_limits.sql): an agent's claim honours them, the human's does not.
-- params: id, owner, ttl_seconds, claimer_kind, claimer_endpoint_id, claimer_session, claimant,
--   token_hash, attempts_cap, trace_id (bytea, 16 bytes, or NULL), and the scope's parameters
-- returns: as claim_next; no row when the todo is out of scope or not claimable.
-- Uses index: todos_pkey.
WITH @{queue_limited},
cand AS (
    SELECT t.id AS cand_id, t.state AS prior_state, t.attempts_total AS prior_total
      FROM todos t
     WHERE t.id = %(id)s AND @{scope}
       AND (t.assignee IS NULL OR t.assignee = %(owner)s OR %(claimer_kind)s = 'owner')
       AND @{claimable}
       AND @{queue_open}
       AND @{queue_limits}
       FOR UPDATE
),
@{claim_tail}
