-- heartbeat: extend the lease of a claimed todo (agent: the holder, fenced; operator: the
--   owning human). The todo row carries the live lease. The open attempt's last_heartbeat_at
--   and lease_expires_at are written only when last_heartbeat_at would move by more than a
--   minute (docs/decisions/0006-heartbeat-sampling.md): the per-heartbeat attempt write cost 15–35 % of
--   heartbeat throughput, and a minute still bounds an attempt's time of death.
-- Most heartbeats read and write the todo row only: the guard checks the todo's copy of the
--   fence digest (_fence.sql), and the todo's attempt_heartbeat_at says when the attempt was
--   last written (todos/migrations/0003), so no attempt page is read (the probe the statement
--   made before, 2-3 buffers; docs/decisions/0005-lease-copy.md).
-- `upd` moves attempt_heartbeat_at to now() exactly when the write is due; `touched` then writes
--   the attempt. Its seq comes from a scalar subquery (an InitPlan, run first) that is NULL when
--   no write is due, and an index probe for seq = NULL ends before it reads a page. There is no
--   `ended_at IS NULL` test: it would let the planner pick todo_attempts_one_open (todo_id only)
--   and read it on every heartbeat; upd matched a claimed todo, and a claimed todo's
--   attempts_total is the seq of its open attempt (the race tests check it while they run).
-- A heartbeat that waited on the row (a concurrent claim) and cannot see the new attempt from its
--   snapshot still extends the lease, but neither writes the attempt nor moves the todo's record
--   of the write: the due write is checked against the attempt (_current_attempt.sql) before the
--   copy moves, and only when it is due (AND stops at the first false), so the probe runs once a
--   minute, not on every heartbeat.
-- params: id, ttl_seconds, and the guard's parameters
-- returns: the todo and attempt_seq; no row on a miss.
-- Uses index: todos_pkey; todo_attempts_pkey once a minute.
WITH upd AS (
    UPDATE todos t
       SET @{activity_bump}@{lease_extended}
     -- Plan rule 1 (todos/sql/README.md).
     WHERE t.id = %(id)s
       AND CASE WHEN t.state = 'claimed' AND @{guard}
                THEN true ELSE false END
    RETURNING @{returned}
),
touched AS (
    UPDATE todo_attempts a
       SET last_heartbeat_at = now(),
           lease_expires_at = (SELECT lease_expires_at FROM upd)
     WHERE a.todo_id = %(id)s
       AND a.seq = (SELECT attempts_total FROM upd WHERE attempt_heartbeat_at = now())
)@{activity}
SELECT upd.*, upd.attempts_total AS attempt_seq@{extend_notify} FROM upd
