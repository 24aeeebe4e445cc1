-- in_scope: classify a transition's miss. A row in scope that did not match is a conflict; no
--   row in scope (unknown or foreign, indistinguishable) is not found.
-- params: id, and the scope's parameters
-- returns: one row when the todo exists in scope.
-- Uses index: todos_pkey.
SELECT 1 FROM todos t WHERE t.id = %(id)s AND @{scope}
