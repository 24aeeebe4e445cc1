-- heartbeat: extend the lease of a claimed todo (agent: the holder, fenced; operator: the
--   owning human). The todo row carries the live lease. The open attempt's last_heartbeat_at
--   and lease_expires_at are written only when last_heartbeat_at would move by more than a
--   minute (seed 000, REQ-18 fallback): the per-heartbeat attempt write cost 15–35 % of
--   heartbeat throughput, and a minute still bounds an attempt's time of death.
-- params: id, ttl_seconds, and the guard's parameters
-- returns: the todo and attempt_seq; no row on a miss.
-- Uses index: todos_pkey, todo_attempts_pkey.
WITH upd AS (
    UPDATE todos t
       SET lease_expires_at = now() + %(ttl_seconds)s * interval '1 second', updated_at = now()
     WHERE t.id = %(id)s AND t.state = 'claimed' AND @{guard}
    RETURNING t.*
),
touched AS (
    UPDATE todo_attempts a
       SET last_heartbeat_at = now(), lease_expires_at = upd.lease_expires_at
      FROM upd
     -- Keyed by %(id)s too, not only joined to upd: one probe of todo_attempts_pkey whatever
     -- the statistics, never a read of every open attempt (docs/performance.md, proposal 3).
     WHERE a.todo_id = %(id)s AND a.todo_id = upd.id AND a.seq = upd.attempts_total
       AND a.ended_at IS NULL
       AND (a.last_heartbeat_at IS NULL OR a.last_heartbeat_at < now() - interval '1 minute')
)
SELECT upd.*, upd.attempts_total AS attempt_seq FROM upd
