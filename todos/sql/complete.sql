-- complete: claimed → completed; the open attempt closes completed/done with the report.
-- params: id, result (jsonb), summary, summary_truncated, artifact, and the guard's parameters
-- returns: the todo and attempt_seq; no row on a miss.
-- Uses index: todos_pkey, todo_attempts_pkey.
WITH upd AS (
    UPDATE todos t
       SET @{activity_bump}state = 'completed', result = %(result)s, @{unheld},
           finished_at = now(), updated_at = now()
     -- Plan rule 1 (todos/sql/README.md).
     WHERE t.id = %(id)s
       AND CASE WHEN t.state = 'claimed' AND @{guard}
                THEN true ELSE false END
    RETURNING @{returned}
),
closed AS (
    UPDATE todo_attempts a
       SET ended_at = now(), outcome = 'completed', disposition = 'done',
           summary = %(summary)s, summary_truncated = %(summary_truncated)s,
           artifact = %(artifact)s
      FROM upd
     -- Plan rule 2 (todos/sql/README.md).
     WHERE a.todo_id = %(id)s AND a.todo_id = upd.id AND a.seq = upd.attempts_total
       AND a.ended_at IS NULL
)@{activity}
SELECT upd.*, upd.attempts_total AS attempt_seq, @{notify_changed} AS notified,
       @{slot_freed} AS freed
  FROM upd
