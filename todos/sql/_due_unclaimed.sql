-- due_unclaimed: ring_due's scan of todos pending longer than `unclaimed_seconds`, rung again
--   with the wait doubling per ring (`max_rings` bounds ring_attempts).
t.updated_at <= now() - make_interval(secs => %(unclaimed_seconds)s)
AND t.ring_attempts < %(max_rings)s
AND (t.last_ringed_at IS NULL
     OR t.last_ringed_at <= now() - make_interval(
            secs => %(unclaimed_seconds)s * power(2, least(greatest(t.ring_attempts - 1, 0), 20))))
