-- due_not_before: ring_due's every-pass scan for deferred todos that became due: not_before
--   passed and no ring since (create.sql announced them as changed, not ready, so nobody rang
--   them early). A range of todos_not_before_idx as short as the todos that fell due.
t.not_before IS NOT NULL AND t.not_before <= now()
AND (t.last_ringed_at IS NULL OR t.last_ringed_at < t.not_before)
