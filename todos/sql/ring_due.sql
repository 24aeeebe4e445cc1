-- ring_due: the sweep's rings, each taking the shared gate as ring.sql does. A pending todo is
--   due a ring when the gate is open (no ring in the last `gate_seconds`) and @{due} holds, one
--   of four scans (todos/lifecycle/statements.py fills it in):
--   - `gate` (_due_gate.sql, every pass): it became claimable again after its last ring
--     (released, reaped, requeued inside the gate's minute); the ring the gate held back goes out;
--   - `push` (_due_push.sql, every pass): its endpoint has a push URL and nobody's MCP stream
--     rang it since it became claimable;
--   - `not_before` (_due_not_before.sql, every pass): a deferred todo became due since its
--     last ring (none before it was due: _due_now.sql holds every scan to that);
--   - `unclaimed` (_due_unclaimed.sql, once a minute: it reads every stale pending todo): it has
--     waited `unclaimed_seconds` since it became pending, and as long again, doubled per ring it
--     already had, since its last ring; at most `max_rings` rings in all.
--   None rings a todo on a paused queue (_queue_open.sql); once resumed, the scans find it.
-- params: gate_seconds, unclaimed_seconds, max_rings, limit, reason, ringer (the sweeper), subscribers,
--   activity_cap
-- returns: id, endpoint_id, queue, ring_attempts, reason of each rung todo.
-- Uses index: todos_pending_ring_idx (last_ringed_at) WHERE state = 'pending';
--   todos_not_before_idx (not_before) for the `not_before` scan.
WITH due AS (
    SELECT t.id
      FROM todos t
     WHERE t.state = 'pending'
       AND (t.last_ringed_at IS NULL
            OR t.last_ringed_at <= now() - make_interval(secs => %(gate_seconds)s))
       AND @{due}
       AND @{due_now}
       AND @{queue_open}
     ORDER BY t.updated_at
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
),
upd AS (
    UPDATE todos t
       SET last_ringed_at = now(), ring_attempts = t.ring_attempts + 1,
           activity_seq = t.activity_seq + 1
      FROM due
     WHERE t.id = due.id
    RETURNING t.id, t.endpoint_id, t.queue, t.activity_seq, t.ring_attempts,
              gen_random_uuid() AS ring_id, %(reason)s::text AS reason,
              %(ringer)s::text AS ringer
),
@{ring_arms}
SELECT upd.id, upd.endpoint_id, upd.queue, upd.ring_attempts, upd.reason,
       @{notify_rung} AS notified
  FROM upd
