-- current_attempt: the todo's open attempt (seq = attempts_total) is visible to this statement.
--
-- Why it is needed: a statement that waits for a todo's row lock (or finds the row changed since
-- its snapshot) re-checks its WHERE clause against the newest version of the todo row, but every
-- other table, todo_attempts included, is still read from the statement's snapshot. If another
-- transaction opened a new attempt after that snapshot, this statement would see the todo claimed
-- anew yet could not see (so could not close, nor check the fence of) that attempt. Keyed on the
-- re-checked row's attempts_total, this predicate is false exactly then, so the statement does
-- not match; the caller gets a conflict (or the sweep leaves the row for its next pass) instead
-- of leaving an attempt open behind a finished todo. A cancel runs once more on such a miss, with
-- a new snapshot that sees the attempt (run_single's again_on_miss, todos/lifecycle/core.py): a
-- requester that cancels as the agent claims means the cancel, whoever holds the todo.
--
-- OFFSET 0 keeps it one probe of the todo's key per row checked. Without it PostgreSQL may plan
-- the EXISTS as a hashed subplan (it does whenever the statistics show few open attempts): every
-- open attempt read and hashed on each call, so each transition costs O(leases in flight), 458
-- buffers instead of 3 with 500 leases held (tests/switchboard/test_plans.py).
EXISTS (SELECT 1 FROM todo_attempts ca
         WHERE ca.todo_id = t.id AND ca.seq = t.attempts_total AND ca.ended_at IS NULL
        OFFSET 0)
