-- unclaim_pushes: hand back push rings taken but not tried (their endpoint's breaker opened
--   while they waited in the sender's batch): the try claim_pushes counted is undone, and they
--   are due again at once (claim_pushes holds them back while the breaker is open).
-- params: ids
-- returns: nothing.
-- Uses index: push_attempts_pkey.
UPDATE push_attempts p
   SET tries = greatest(p.tries - 1, 0), next_try_at = now()
 WHERE p.id = ANY(%(ids)s) AND p.state = 'queued'
