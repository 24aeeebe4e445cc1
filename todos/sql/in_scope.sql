-- in_scope: classify a transition's miss. A row in scope that did not match is a conflict; no
--   row in scope (unknown or foreign, indistinguishable) is not found.
-- params: id, and the scope's parameters
-- returns: one row when the todo exists in scope: its queue and state (a claim's miss says when
--   the queue stopped it).
-- Uses index: todos_pkey.
SELECT t.queue, t.state FROM todos t WHERE t.id = %(id)s AND @{scope}
