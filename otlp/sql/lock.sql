-- lock: take each bound todo's newest attempt row, in todo order, before counting its spans.
--   Every batch for a todo locks this same row first, so two batches for one todo count and
--   insert one after the other and cannot both pass a cap (otlp/store.py sets out why this row
--   and why nothing else is locked).
-- params: todo_ids (text[])
-- returns: todo_id, seq of each row locked.
-- Uses index: todos_pkey, todo_attempts_pkey.
SELECT a.todo_id, a.seq
  FROM todos t
  JOIN todo_attempts a ON a.todo_id = t.id AND a.seq = t.attempts_total
 WHERE t.id = ANY(%(todo_ids)s::text[])
 ORDER BY a.todo_id
   FOR UPDATE OF a
