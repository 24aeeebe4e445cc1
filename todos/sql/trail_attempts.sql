-- trail_attempts: a todo's attempts for its trail page, newest first, with what the drawer's
--   read leaves out: the notes and spans refused over each attempt's caps, and the name of the
--   human behind an operator claim.
-- params: id, limit, and the scope's parameters.
-- returns: the attempt's columns, notes_dropped, spans_dropped, and claimer_name (for an
--   operator's claim, whose owner is "human:<id>", the username while that human exists; else
--   NULL: an agent's owner string is its own choice and names nobody); no rows for a todo
--   outside the scope, exactly as for an unknown one.
-- The open attempt shows the todo's lease, the live one: the attempt's copy moves only with the
--   sampled heartbeat write (AttemptView.with_lease says why; a paused todo keeps the copy).
-- Uses index: todos_pkey; todo_attempts_pkey (todo_id, seq) read backwards and stopped after
--   `limit` rows; humans_pkey per row returned.
SELECT a.todo_id, a.seq, a.attempt, a.claimer_kind, a.claimer_endpoint_id, a.claimer_session,
       a.owner, a.claimant, a.claimed_at, a.last_heartbeat_at,
       CASE WHEN a.ended_at IS NULL AND a.seq = t.attempts_total
            THEN COALESCE(t.lease_expires_at, a.lease_expires_at)
            ELSE a.lease_expires_at END AS lease_expires_at,
       a.ended_at,
       a.outcome, a.disposition, a.summary, a.summary_truncated, a.artifact, a.notes_dropped,
       a.spans_dropped, h.username AS claimer_name
  FROM todos t
  JOIN todo_attempts a ON a.todo_id = t.id
  LEFT JOIN LATERAL (@{human_named}) h ON a.claimer_kind = 'owner'
 WHERE t.id = %(id)s AND a.todo_id = %(id)s AND @{scope}
 ORDER BY a.seq DESC
 LIMIT %(limit)s
