-- release: claimed → pending, the budget not refunded; the open attempt closes
--   released/requeued. Rings the doorbell: the todo is claimable again.
-- params: id, summary, summary_truncated, and the guard's parameters
-- returns: the todo and attempt_seq; no row on a miss.
-- Uses index: todos_pkey, todo_attempts_pkey.
WITH upd AS (
    UPDATE todos t
       SET @{activity_bump}state = 'pending', @{unheld}, updated_at = now()
     -- Plan rule 1 (todos/sql/README.md).
     WHERE t.id = %(id)s
       AND CASE WHEN t.state = 'claimed' AND @{guard}
                THEN true ELSE false END
    RETURNING t.*
),
closed AS (
    UPDATE todo_attempts a
       SET ended_at = now(), outcome = 'released', disposition = 'requeued',
           summary = %(summary)s, summary_truncated = %(summary_truncated)s
      FROM upd
     -- Plan rule 2 (todos/sql/README.md).
     WHERE a.todo_id = %(id)s AND a.todo_id = upd.id AND a.seq = upd.attempts_total
       AND a.ended_at IS NULL
)@{activity}
SELECT upd.*, upd.attempts_total AS attempt_seq, @{notify_ready} AS rung FROM upd
