-- resume (A2A): the owning human answers an interrupted todo; it is claimed again by the same
--   holder with a fresh lease, and the open attempt's lease follows. The answer is kept under
--   input_request.response for the holder to read.
-- params: id, response (jsonb or null), ttl_seconds, and the human scope's parameters
-- returns: the todo and attempt_seq; no row on a miss.
-- Uses index: todos_pkey, todo_attempts_pkey.
WITH cur AS (
    -- The row locked first, so that its state as re-checked is the activity's "from".
    -- Plan rule 1 (todos/sql/README.md).
    SELECT t.id, t.state AS from_state
      FROM todos t
     WHERE t.id = %(id)s
       AND CASE WHEN t.state IN ('input-required', 'auth-required') AND @{scope}
                     AND @{current_attempt}
                THEN true ELSE false END
       FOR UPDATE
),
upd AS (
    UPDATE todos t
       SET @{activity_bump}state = 'claimed',
           -- Capped as a heartbeat's (_lease_cap.sql): the wait for input counts.
           lease_expires_at = LEAST(now() + %(ttl_seconds)s * interval '1 second', @{lease_cap}),
           input_request = CASE WHEN %(response)s::jsonb IS NULL THEN t.input_request
                                ELSE COALESCE(t.input_request, '{}'::jsonb)
                                     || jsonb_build_object('response', %(response)s::jsonb) END,
           updated_at = now()
      FROM cur
     WHERE t.id = cur.id
    RETURNING t.*, cur.from_state
),
touched AS (
    UPDATE todo_attempts a
       SET lease_expires_at = upd.lease_expires_at
      FROM upd
     -- Plan rule 2 (todos/sql/README.md).
     WHERE a.todo_id = %(id)s AND a.todo_id = upd.id AND a.seq = upd.attempts_total
       AND a.ended_at IS NULL
)@{activity}
SELECT upd.*, upd.attempts_total AS attempt_seq, @{notify_changed} AS notified FROM upd
