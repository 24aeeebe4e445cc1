-- due_gate: ring_due's every-pass scan for rings the gate held back: the todo became claimable
--   again after a ring of the last `unclaimed_seconds` (older ones are the unclaimed scan's), a
--   range of todos_pending_ring_idx as short as the recent rings.
t.last_ringed_at > now() - make_interval(secs => %(unclaimed_seconds)s)
AND t.last_ringed_at < t.updated_at
