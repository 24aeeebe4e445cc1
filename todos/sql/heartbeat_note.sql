-- heartbeat_note: heartbeat.sql, and the holder's progress note kept as a `note` activity row on
--   the open attempt. A separate statement so that heartbeats without a note pay nothing for it.
--   While the attempt holds fewer than notes_cap notes the note is stored (seq from the todo's
--   activity_seq, see _activity_arm.sql); at the cap the attempt's notes_dropped counts it
--   instead, in the same UPDATE as the sampled heartbeat write (one row is never updated twice
--   in a statement). Past the todo's activity cap, notes older than the newest activity_cap
--   seqs are deleted. A heartbeat that does not match (not the holder, a wrong fence token)
--   changes nothing, note included.
-- params: id, ttl_seconds, note, note_truncated, actor_ref, notes_cap, activity_cap, guard's
-- returns: the todo, attempt_seq and noted (the note was stored); no row on a miss.
-- Uses index: todos_pkey; idx_todo_activity_note to count the attempt's notes; todo_attempts_pkey
--   when the write is due or a note is dropped; todo_activity_pkey to trim.
WITH room AS (
    -- Read from the statement's snapshot, as the attempt seq the todo row names there.
    SELECT count(*) < %(notes_cap)s AS ok
      FROM (SELECT 1 FROM todo_activity n
             WHERE n.todo_id = %(id)s AND n.kind = 'note'
               AND n.attempt_seq = (SELECT attempts_total FROM todos WHERE id = %(id)s)
             LIMIT %(notes_cap)s) c
),
upd AS (
    UPDATE todos t
       SET activity_seq = t.activity_seq + CASE WHEN (SELECT ok FROM room) THEN 1 ELSE 0 END,
           @{lease_extended}
     -- Plan rule 1 (todos/sql/README.md).
     WHERE t.id = %(id)s
       AND CASE WHEN t.state = 'claimed' AND @{guard}
                THEN true ELSE false END
    RETURNING @{returned}
),
touched AS (
    -- Plan rule 2. The sampled heartbeat write (heartbeat.sql) and the dropped note's count.
    UPDATE todo_attempts a
       SET last_heartbeat_at = CASE WHEN upd.attempt_heartbeat_at = now() THEN now()
                                    ELSE a.last_heartbeat_at END,
           lease_expires_at = CASE WHEN upd.attempt_heartbeat_at = now()
                                   THEN upd.lease_expires_at ELSE a.lease_expires_at END,
           notes_dropped = a.notes_dropped + CASE WHEN room.ok THEN 0 ELSE 1 END
      FROM upd, room
     WHERE a.todo_id = %(id)s AND a.todo_id = upd.id AND a.seq = upd.attempts_total
       AND (upd.attempt_heartbeat_at = now() OR NOT room.ok)
),
noted AS (
    INSERT INTO todo_activity (todo_id, endpoint_id, seq, attempt_seq, kind, actor_kind,
                               actor_ref, message, truncated)
    SELECT upd.id, upd.endpoint_id, upd.activity_seq, upd.attempts_total, 'note', 'endpoint', %(actor_ref)s,
           %(note)s, %(note_truncated)s
      FROM upd, room
     WHERE room.ok
    RETURNING seq
),
trimmed AS (
    DELETE FROM todo_activity v
     USING noted
     WHERE v.todo_id = %(id)s AND v.kind = 'note' AND v.seq <= noted.seq - %(activity_cap)s
)
SELECT upd.*, upd.attempts_total AS attempt_seq, EXISTS (SELECT 1 FROM noted) AS noted,
       @{notify_changed} AS notified
  FROM upd
