-- bulk_cancel: a human cancels the unfinished todos a Board filter selects, at most `limit` of
--   them (oldest first), each as cancel.sql cancels one: canceled, an open attempt closed
--   canceled/canceled, its activity row (a human_action of the human).
--   Each todo is re-checked under its row lock (FOR UPDATE … SKIP LOCKED: a row locked now is
--   being changed, a claim perhaps, and is left alone, never waited for): still in scope, still
--   selected, still unfinished (_bulk_cancel_target.sql, which also requires an in-flight
--   todo's open attempt to be visible, _current_attempt.sql), created before the count the
--   human confirmed and not claimed since (claimed_at <= seen_at): a todo claimed between the
--   count and the confirm is not what the human counted, and is not canceled.
-- params: seen_at, limit, summary, summary_truncated, the scope's, the selection's, the
--   activity arm's
-- returns: id, endpoint_id, state, attempt_seq (the attempt closed, or NULL) of each todo
--   canceled; none when nothing matched.
-- Uses index: todos_board_state_idx (endpoint_id, state, …) for a human's endpoints; todos_pkey
--   for the update; todo_attempts_pkey for the attempts closed.
-- @{selection} is the filter's fixed fragment (todos.queries.filter_where).
WITH cur AS (
    SELECT t.id, t.state AS from_state
      FROM todos t
     WHERE @{scope} AND @{selection} AND @{bulk_cancel_target}
       AND t.created_at <= %(seen_at)s
       AND (t.claimed_at IS NULL OR t.claimed_at <= %(seen_at)s)
     ORDER BY t.created_at, t.id
     LIMIT %(limit)s
       FOR UPDATE OF t SKIP LOCKED
),
upd AS (@{cancel_cur}),
closed AS (
    -- The open attempt of each todo that was in flight: seq = attempts_total, as cancel.sql.
    UPDATE todo_attempts a
       SET ended_at = now(), outcome = 'canceled', disposition = 'canceled',
           summary = %(summary)s, summary_truncated = %(summary_truncated)s
      FROM upd
     WHERE a.todo_id = upd.id AND a.seq = upd.attempts_total AND a.ended_at IS NULL
    RETURNING a.todo_id
)@{activity}
SELECT upd.id, upd.endpoint_id, upd.state, @{bulk_canceled_attempt} AS attempt_seq,
       @{notify_changed} AS notified,
       CASE WHEN upd.from_state IN ('claimed', 'input-required', 'auth-required') THEN @{slot_freed} END AS freed
  FROM upd
