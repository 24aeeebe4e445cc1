-- claimable: the claim predicate on todos t. Pending and not past its start_by (one still
-- pending then is the deadline sweep's to dead-letter, deadlines.sql, and no claim takes it
-- meanwhile), unless it was claimed before (attempts_total > 0): start_by bounds the first
-- claim only, so one back to pending after a release, a reap or a due retry stays claimable;
-- claimed with a lapsed lease and budget left (a takeover, only when its open
-- attempt is visible so it can be closed, see _current_attempt.sql); failed with a due retry
-- and budget left. And in every case due (not_before passed or unset) and not past its
-- finish_by: a claim never hands out a todo before its time or after its deadlines
-- (docs/decisions/0027-time-and-cancellation.md).
-- Implies the predicate of todos_claim_queue_idx, so the planner may use that index; the time
-- tests filter the index's rows as the scan reads them. todos.states.is_claimable and
-- Todo.objects.claimable() say the same in Python (tests/todos/test_states.py).
((t.not_before IS NULL OR t.not_before <= now())
 AND (t.finish_by IS NULL OR t.finish_by > now())
 AND ((t.state = 'pending' AND (t.start_by IS NULL OR t.start_by > now() OR t.attempts_total > 0))
      OR (t.state = 'claimed' AND t.lease_expires_at < now() AND t.attempt < t.max_attempts
          AND @{current_attempt})
      OR (t.state = 'failed' AND t.next_retry_at IS NOT NULL AND t.next_retry_at <= now()
          AND t.attempt < t.max_attempts)))
