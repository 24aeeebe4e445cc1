-- cancel: any todo not yet finished (pending, in flight, or failed awaiting a retry) → canceled;
--   an open attempt closes canceled/canceled. By a human (Board) or the endpoint (A2A).
-- params: id, summary, summary_truncated, and the scope's parameters
-- returns: the todo and attempt_seq; no row on a miss.
-- Uses index: todos_pkey, todo_attempts_pkey.
WITH cur AS (
    -- The row locked first, so that its state as re-checked is the activity's "from".
    SELECT t.id, t.state AS from_state
      FROM todos t
     WHERE t.id = %(id)s AND @{scope}
       AND @{unfinished}
       FOR UPDATE
),
upd AS (@{cancel_cur}),
closed AS (
    UPDATE todo_attempts a
       SET ended_at = now(), outcome = 'canceled', disposition = 'canceled',
           summary = %(summary)s, summary_truncated = %(summary_truncated)s
      FROM upd
     -- Plan rule 2 (todos/sql/README.md).
     WHERE a.todo_id = %(id)s AND a.todo_id = upd.id AND a.seq = upd.attempts_total
       AND a.ended_at IS NULL
    RETURNING a.seq
)@{activity}
SELECT upd.*, (SELECT seq FROM closed) AS attempt_seq, @{notify_changed} AS notified,
       CASE WHEN upd.from_state IN ('claimed', 'input-required', 'auth-required') THEN @{slot_freed} END AS freed
  FROM upd
