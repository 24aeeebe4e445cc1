-- due_now: todo t's not_before is unset or passed: a claim may take it, so a ring may announce
-- it. A deferred todo is rung once due, by ring_due's `not_before` scan (_due_not_before.sql).
(t.not_before IS NULL OR t.not_before <= now())
