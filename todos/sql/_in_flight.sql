-- in_flight: a holder has the todo t: its lease runs (claimed) or is paused for a human
-- (input-required, auth-required). todos.states.is_in_flight says the same in Python, and
-- tests/todos/test_states.py checks that they agree.
t.state IN ('claimed', 'input-required', 'auth-required')
