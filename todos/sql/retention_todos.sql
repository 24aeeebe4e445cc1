-- retention_todos: delete up to `batch` finished todos past retention (hybrid, docs/guides/operations.md):
--   finished more than `days` ago, or beyond the newest `max_terminal` finished todos of their
--   endpoint. Their attempts (and later spans, activity, bindings) go by ON DELETE CASCADE,
--   their MCP task rows by the statement's own DELETE; their alerts are the alerts app's, which
--   unlinks them in the same transaction (todos/retention.py runs its eraser with the ids
--   returned here). Rows are locked SKIP LOCKED, so two sweepers never delete the same row
--   twice, and a row a transition holds is left for the next pass.
-- params: days, max_terminal, batch
-- returns: id, endpoint_id and its activity rows' count per deleted todo.
-- Uses index: todos_finished_idx (endpoint_id, finished_at DESC) WHERE finished_at IS NOT NULL;
--   mcp_tasks_pkey.
WITH candidates AS (
    SELECT x.id
      FROM endpoints e
     CROSS JOIN LATERAL (
            SELECT t.id FROM todos t
             WHERE t.endpoint_id = e.id AND t.finished_at IS NOT NULL
             ORDER BY t.finished_at DESC
            OFFSET %(max_terminal)s
             LIMIT %(batch)s
           ) x
    UNION
    SELECT x.id
      FROM endpoints e
     CROSS JOIN LATERAL (
            SELECT t.id FROM todos t
             WHERE t.endpoint_id = e.id AND t.finished_at IS NOT NULL
               AND t.finished_at < now() - %(days)s * interval '1 day'
             ORDER BY t.finished_at
             LIMIT %(batch)s
           ) x
),
victims AS (
    SELECT t.id
      FROM todos t JOIN candidates c ON c.id = t.id
     WHERE t.finished_at IS NOT NULL
     LIMIT %(batch)s
       FOR UPDATE OF t SKIP LOCKED
),
gone AS (
    DELETE FROM todos t
     USING victims v
     WHERE t.id = v.id AND t.finished_at IS NOT NULL
    RETURNING t.id, t.endpoint_id
),
-- mcp_tasks names its todo without a foreign key (mcp_server/migrations/0003_tasks.py says why):
-- its rows go here, in the same statement, so none outlives its todo. (An alert names its todo
-- without one too, but outlives it, rewritten: docs/decisions/0037-alerts.md says why that is
-- the alerts app's eraser's work and not this statement's.)
tasks AS (
    DELETE FROM mcp_tasks m USING gone WHERE m.todo_id = gone.id
)
-- The activity rows that go with each todo by cascade, counted from the statement's snapshot
-- (which still holds them).
SELECT gone.id, gone.endpoint_id,
       (SELECT count(*) FROM todo_activity a WHERE a.todo_id = gone.id) AS activity
  FROM gone
