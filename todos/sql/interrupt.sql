-- interrupt (A2A): the holder pauses its claim awaiting input or authorization. The lease is
--   paused (lease_expires_at cleared; the reaper only looks at 'claimed'), the attempt stays open.
-- params: id, to_state ('input-required' | 'auth-required'), input_request (jsonb), guard's
-- returns: the todo and attempt_seq; no row on a miss.
-- Uses index: todos_pkey.
WITH upd AS (
    UPDATE todos t
       SET @{activity_bump}
           state = %(to_state)s, input_request = %(input_request)s, lease_expires_at = NULL,
           updated_at = now()
     -- Plan rule 1 (todos/sql/README.md).
     WHERE t.id = %(id)s
       AND CASE WHEN t.state = 'claimed' AND @{guard}
                THEN true ELSE false END
    RETURNING t.*
)@{activity}
SELECT upd.*, upd.attempts_total AS attempt_seq, @{notify_changed} AS notified FROM upd
