-- fail: claimed → failed. With budget left and retryable, a retry is scheduled after the backoff
--   min(retry_base * 2^(attempt-1), retry_max) ±10 % jitter, or after retry_after_seconds when
--   given; otherwise, or when that retry would fall due after its finish_by (_retry_in_time.sql),
--   the todo is dead-lettered. The open attempt closes failed/retry_scheduled or
--   failed/dead_lettered.
-- params: id, result (jsonb), summary, summary_truncated, artifact, retryable,
--   retry_after_seconds (null for the backoff), retry_base_seconds, retry_max_seconds, guard's
-- returns: the todo (next_retry_at set when a retry is scheduled) and attempt_seq.
-- Uses index: todos_pkey, todo_attempts_pkey.
WITH upd AS (
    UPDATE todos t
       SET @{activity_bump}state = 'failed', result = %(result)s, @{unheld},
           next_retry_at = CASE WHEN %(retryable)s AND t.attempt < t.max_attempts
                                     AND @{retry_in_time} THEN
               @{retry_backoff}
           END,
           finished_at = CASE WHEN %(retryable)s AND t.attempt < t.max_attempts
                                   AND @{retry_in_time} THEN NULL
                              ELSE now() END,
           updated_at = now()
     -- Plan rule 1 (todos/sql/README.md).
     WHERE t.id = %(id)s
       AND CASE WHEN t.state = 'claimed' AND @{guard}
                THEN true ELSE false END
    RETURNING @{returned}
),
closed AS (
    UPDATE todo_attempts a
       SET ended_at = now(), outcome = 'failed',
           disposition = CASE WHEN upd.next_retry_at IS NULL THEN 'dead_lettered'
                              ELSE 'retry_scheduled' END,
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
