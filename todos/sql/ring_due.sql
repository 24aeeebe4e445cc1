-- ring_due: the sweep's rings, each taking the shared gate as ring.sql does. A pending todo is
--   due a ring when the gate is open (no ring in the last `gate_seconds`) and either
--   - `gate`: it became claimable again after its last ring (released, reaped, requeued inside
--     the gate's minute), so the ring the gate refused then goes out now; or
--   - `push`: its endpoint has a push URL and it was never rung since it became claimable
--     (nobody's MCP stream rang it); or
--   - `unclaimed`: it has waited `unclaimed_seconds` since it became pending, and as long again,
--     doubled per ring it already had, since its last ring; at most `max_rings` rings in all.
-- params: gate_seconds, unclaimed_seconds, max_rings, limit, subscribers, activity_cap
-- returns: id, endpoint_id, queue, ring_attempts, reason of each rung todo.
-- Uses index: todos_pending_ring_idx (updated_at) WHERE state = 'pending'.
WITH due AS (
    SELECT t.id,
           CASE WHEN t.last_ringed_at IS NOT NULL AND t.last_ringed_at < t.updated_at THEN 'gate'
                WHEN t.last_ringed_at IS NULL
                     AND t.updated_at > now() - make_interval(secs => %(unclaimed_seconds)s)
                     THEN 'push'
                ELSE 'unclaimed' END AS reason
      FROM todos t
     WHERE t.state = 'pending'
       AND (t.last_ringed_at IS NULL
            OR t.last_ringed_at <= now() - make_interval(secs => %(gate_seconds)s))
       AND (
            (t.last_ringed_at IS NOT NULL AND t.last_ringed_at < t.updated_at)
         OR (t.last_ringed_at IS NULL
             AND EXISTS (SELECT 1 FROM endpoints e
                          WHERE e.id = t.endpoint_id AND e.push_url IS NOT NULL
                            AND e.revoked_at IS NULL))
         OR (t.ring_attempts < %(max_rings)s
             AND t.updated_at <= now() - make_interval(secs => %(unclaimed_seconds)s)
             AND (t.last_ringed_at IS NULL
                  OR t.last_ringed_at <= now() - make_interval(
                         secs => %(unclaimed_seconds)s
                                 * power(2, least(greatest(t.ring_attempts - 1, 0), 20)))))
       )
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
              gen_random_uuid() AS ring_id, due.reason, 'sweeper'::text AS ringer
),
@{ring_arms}
SELECT upd.id, upd.endpoint_id, upd.queue, upd.ring_attempts, upd.reason,
       @{notify_rung} AS notified
  FROM upd
