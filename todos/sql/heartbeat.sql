-- heartbeat: extend the lease of a claimed todo (agent: the holder, fenced; operator: the
--   owning human). The todo row carries the live lease. The open attempt's last_heartbeat_at
--   and lease_expires_at are written only when last_heartbeat_at would move by more than a
--   minute (seed 000, REQ-18 fallback): the per-heartbeat attempt write cost 15–35 % of
--   heartbeat throughput, and a minute still bounds an attempt's time of death.
-- The open attempt is read once, in `cur`: the guard's fence (or current-attempt) check and the
--   once-a-minute write both use that read, so a heartbeat probes todo_attempts once, and a
--   second time only in the minute's one write (lifecycle.py passes the `cur` forms of the
--   fence and current_attempt fragments for this statement). `cur` is read from the
--   statement's snapshot; matching it to the re-checked row's attempts_total keeps the
--   guarantee of _current_attempt.sql: a statement that cannot see the current attempt misses.
-- params: id, ttl_seconds, and the guard's parameters
-- returns: the todo and attempt_seq; no row on a miss.
-- Uses index: todos_pkey, todo_attempts_one_open (the open attempt of one todo).
WITH cur AS MATERIALIZED (
    SELECT a.seq, a.last_heartbeat_at, a.lease_token_hash
      FROM todo_attempts a
     WHERE a.todo_id = %(id)s AND a.ended_at IS NULL
),
upd AS (
    UPDATE todos t
       SET lease_expires_at = now() + %(ttl_seconds)s * interval '1 second', updated_at = now()
     WHERE t.id = %(id)s AND t.state = 'claimed' AND @{guard}
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
