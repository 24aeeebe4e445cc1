-- retention_todos_count: how many todos retention_todos would delete, for --dry-run.
-- params: days, max_terminal
-- returns: n, and activity (the activity rows that would go with them)
-- Uses index: todos_finished_idx.
SELECT count(*) AS n,
       coalesce(sum((SELECT count(*) FROM todo_activity a WHERE a.todo_id = c.id)), 0) AS activity
  FROM (
    SELECT x.id
      FROM endpoints e
     CROSS JOIN LATERAL (
            SELECT t.id FROM todos t
             WHERE t.endpoint_id = e.id AND t.finished_at IS NOT NULL
             ORDER BY t.finished_at DESC
            OFFSET %(max_terminal)s
           ) x
    UNION
    SELECT t.id FROM todos t
     WHERE t.finished_at IS NOT NULL AND t.finished_at < now() - %(days)s * interval '1 day'
) c
