-- lock_todos: take the rows of the todos a rollup will add to, in id order (rollup.sql says why).
-- params: todo_ids (text[])
-- returns: id of each row locked.
-- Uses index: todos_pkey.
SELECT t.id FROM todos t WHERE t.id = ANY(%(todo_ids)s::text[]) ORDER BY t.id FOR UPDATE
