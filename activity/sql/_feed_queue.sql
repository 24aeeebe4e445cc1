-- _feed_queue: the queue filter on an arm's row (its todo @{todo} ), a probe of todos_pkey per
--   row the arm walks, which only a filter on the queue needs (the todo's endpoint is on the
--   row). OFFSET 0 keeps the probe a probe: without it PostgreSQL may turn the EXISTS into a
--   join that starts from the todos of the queue (todos/sql/README.md, plan rule 3, for the
--   same device).
AND EXISTS (SELECT 1 FROM todos t WHERE t.id = @{todo} AND t.queue = %(queue)s OFFSET 0)
