-- unfinished: the todo t is not done for good: pending, in flight (its open attempt visible to
-- this statement, see _current_attempt.sql), or failed awaiting a retry. What cancel moves to
-- canceled and revoking an endpoint dead-letters; the schema's todos_finished_when_final CHECK
-- sets finished_at exactly on the other rows. todos.states.is_unfinished says the same in
-- Python (tests/todos/test_states.py).
(t.state = 'pending'
 OR (@{in_flight} AND @{current_attempt})
 OR (t.state = 'failed' AND t.next_retry_at IS NOT NULL))
