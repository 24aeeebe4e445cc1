-- heartbeat_attempt_read: benchmark variant "hb-b-read", the heartbeat as it was before the todo
--   row carried copies of the open attempt's fence digest and heartbeat write time
--   (todos/migrations/0003): every heartbeat read the open attempt once, in `cur`, for the fence
--   and for the once-a-minute write's check. Its row lookup is the product's (todos_pkey alone).
-- params: id, endpoint_id, owner, token_hash, ttl_seconds
-- returns: the todo and attempt_seq; no row on a miss.
-- Uses index: todos_pkey, todo_attempts_one_open.
WITH cur AS MATERIALIZED (
    SELECT a.seq, a.last_heartbeat_at, a.lease_token_hash
      FROM todo_attempts a
     WHERE a.todo_id = %(id)s AND a.ended_at IS NULL
),
upd AS (
    UPDATE todos t
       SET lease_expires_at = now() + %(ttl_seconds)s * interval '1 second', updated_at = now()
     WHERE t.id = %(id)s
       AND CASE WHEN t.state = 'claimed'
                     AND t.endpoint_id = %(endpoint_id)s AND t.owner = %(owner)s
                     AND EXISTS (SELECT 1 FROM cur
                                  WHERE cur.seq = t.attempts_total
                                    AND ((cur.lease_token_hash IS NULL
                                          AND %(token_hash)s::bytea IS NULL)
                                         OR cur.lease_token_hash = %(token_hash)s::bytea))
                THEN true ELSE false END
    RETURNING t.*
),
touched AS (
    UPDATE todo_attempts a
       SET last_heartbeat_at = now(), lease_expires_at = upd.lease_expires_at
      FROM upd, cur
     WHERE cur.seq = upd.attempts_total
       AND (cur.last_heartbeat_at IS NULL OR cur.last_heartbeat_at < now() - interval '1 minute')
       AND a.todo_id = %(id)s AND a.seq = cur.seq AND a.ended_at IS NULL
)
SELECT upd.*, upd.attempts_total AS attempt_seq FROM upd
