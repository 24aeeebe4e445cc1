-- unclaim_deliveries: hand back alert messages taken but not tried (a channel's sends stop at
--   its first failure): their try is not counted and they are due again now.
-- params: ids
-- returns: nothing.
-- Uses index: alert_deliveries_pkey.
UPDATE alert_deliveries d
   SET tries = greatest(d.tries - 1, 0), next_try_at = now()
 WHERE d.id = ANY(%(ids)s) AND d.state = 'queued'
RETURNING d.id
