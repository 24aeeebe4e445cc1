-- trail_attempts: a todo's attempts for its trail page, newest first, with what the drawer's
--   read leaves out: the notes and spans refused over each attempt's caps, and the spans it
--   stored (the trail says how many of them span retention removed).
-- params: id, limit, and the scope's parameters.
-- returns: the attempt's columns, notes_dropped, spans_dropped and spans_stored; no rows for a
--   todo outside the scope, exactly as for an unknown one. An operator's lease (owner
--   "human:<id>") is named by the page's one read of its actors
--   (switchboard/sql/actor_names.sql).
-- The open attempt shows the todo's lease, the live one: the attempt's copy moves only with the
--   sampled heartbeat write (AttemptView.with_lease says why; a paused todo keeps the copy).
-- Uses index: todos_pkey; todo_attempts_pkey (todo_id, seq) read backwards and stopped after
--   `limit` rows.
SELECT a.todo_id, a.seq, a.attempt, a.claimer_kind, a.claimer_endpoint_id, a.claimer_session,
       a.owner, a.claimant, a.claimed_at, a.last_heartbeat_at,
       CASE WHEN a.ended_at IS NULL AND a.seq = t.attempts_total
            THEN COALESCE(t.lease_expires_at, a.lease_expires_at)
            ELSE a.lease_expires_at END AS lease_expires_at,
       a.ended_at,
       a.outcome, a.disposition, a.summary, a.summary_truncated, a.artifact, a.notes_dropped,
       a.spans_dropped, a.spans_stored, a.input_tokens, a.output_tokens, a.cache_read_tokens,
       a.cache_write_tokens, a.reasoning_tokens, a.unpriced_tokens, a.cost_usd
  FROM todos t
  JOIN todo_attempts a ON a.todo_id = t.id
 WHERE t.id = %(id)s AND a.todo_id = %(id)s AND @{scope}
 ORDER BY a.seq DESC
 LIMIT %(limit)s
