-- todo_dropped: count the spans todos refused at their per-todo cap. Run after the batch
--   committed, as its own transaction (otlp/store.py says why).
-- params: drop_todos (text[]), drop_counts (int[])
-- returns: nothing.
-- Uses index: todos_pkey.
UPDATE todos t
   SET spans_dropped = t.spans_dropped + d.n
  FROM unnest(%(drop_todos)s::text[], %(drop_counts)s::int[]) AS d(todo_id, n)
 WHERE t.id = d.todo_id
