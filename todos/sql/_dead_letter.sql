-- dead_letter: the todo t failed and no retry is scheduled: it runs again only if a human
-- retries it. todos.states.is_dead_letter says the same in Python (tests/todos/test_states.py).
(t.state = 'failed' AND t.next_retry_at IS NULL)
