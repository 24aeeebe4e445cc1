-- release: claimed → pending while budget is left, else → failed, dead-lettered. The claim
--   spent the attempt and a release never refunds it, so a release counts like a fail without
--   backoff: the release that ends the last allowed attempt dead-letters, exactly as a reap of
--   a spent lease does, and no todo is ever pending with its budget spent (which would make the
--   next claim "attempt 6 of 4", and a release loop endless; docs/decisions/0012-release-budget.md).
--   The open attempt closes released/requeued or released/dead_lettered. A requeue rings the
--   doorbell: the todo is claimable again.
-- params: id, summary, summary_truncated, and the guard's parameters
-- returns: the todo and attempt_seq; no row on a miss.
-- Uses index: todos_pkey, todo_attempts_pkey.
WITH upd AS (
    UPDATE todos t
       SET @{activity_bump}state = CASE WHEN t.attempt >= t.max_attempts THEN 'failed'
                                        ELSE 'pending' END,
           finished_at = CASE WHEN t.attempt >= t.max_attempts THEN now() END,
           @{unheld}, updated_at = now()
     -- Plan rule 1 (todos/sql/README.md).
     WHERE t.id = %(id)s
       AND CASE WHEN t.state = 'claimed' AND @{guard}
                THEN true ELSE false END
    RETURNING @{returned}
),
closed AS (
    UPDATE todo_attempts a
       SET ended_at = now(), outcome = 'released',
           disposition = CASE WHEN upd.state = 'failed' THEN 'dead_lettered' ELSE 'requeued' END,
           summary = %(summary)s, summary_truncated = %(summary_truncated)s
      FROM upd
     -- Plan rule 2 (todos/sql/README.md).
     WHERE a.todo_id = %(id)s AND a.todo_id = upd.id AND a.seq = upd.attempts_total
       AND a.ended_at IS NULL
)@{activity}
SELECT upd.*, upd.attempts_total AS attempt_seq,
       CASE WHEN upd.state = 'pending' THEN @{notify_ready} ELSE @{notify_changed} END AS notified,
       @{slot_freed} AS freed
  FROM upd
