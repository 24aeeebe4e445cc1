-- soak_owed_rings: claimable todos owed a ring that has not come: pending, due, on an open
--   queue, not rung since they last became claimable (never rung, or rung before their last
--   change), and the shared gate open for `grace_seconds` already. The doorbell rings such a
--   todo within 2 s of its change while an agent listens, and the sweeper pays a ring the gate
--   held back within a pass of the gate opening (docs/decisions/0015-rings-never-lost.md).
-- params: gate_seconds (ring_gate_seconds), grace_seconds
-- returns: id, owed_since (epoch seconds: when the ring became due, the gate open).
-- Uses index: todos_pending_ring_idx (last_ringed_at) WHERE state = 'pending'.
SELECT t.id,
       extract(epoch FROM greatest(t.updated_at,
                                   t.last_ringed_at + make_interval(secs => %(gate_seconds)s)
                                  ))::float8 AS owed_since
  FROM todos t
 WHERE t.state = 'pending'
   AND (t.last_ringed_at IS NULL OR t.last_ringed_at < t.updated_at)
   AND @{due_now}
   AND @{queue_open}
   AND greatest(t.updated_at, t.last_ringed_at + make_interval(secs => %(gate_seconds)s))
       < now() - make_interval(secs => %(grace_seconds)s)
