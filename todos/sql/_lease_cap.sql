-- lease_cap: the latest instants a lease on todo t may reach, as arguments of LEAST: its
-- finish_by, and its claim's run timeout counted from when the claim was made (@{run_started}:
-- now() in a claim, t.claimed_at after). Either may be NULL (unset), which LEAST ignores.
-- @{run_timeout} is the run timeout in seconds: the todo's own (t.run_timeout_seconds), which
-- a queue's default may back (COALESCE in its place, todos/lifecycle/statements.py).
t.finish_by, @{run_started} + @{run_timeout} * interval '1 second'
