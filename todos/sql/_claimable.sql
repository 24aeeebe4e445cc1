-- claimable: the claim predicate on todos t. Pending; claimed with a lapsed lease and budget
-- left (a takeover, only when its open attempt is visible so it can be closed, see
-- _current_attempt.sql); failed with a due retry and budget left. Implies the predicate of
-- todos_claim_queue_idx, so the planner may use that index. todos.states.is_claimable and
-- Todo.objects.claimable() say the same in Python (tests/todos/test_states.py).
(t.state = 'pending'
 OR (t.state = 'claimed' AND t.lease_expires_at < now() AND t.attempt < t.max_attempts
     AND @{current_attempt})
 OR (t.state = 'failed' AND t.next_retry_at IS NOT NULL AND t.next_retry_at <= now()
     AND t.attempt < t.max_attempts))
