-- forgotten_alerts: the alerts raised about the todos being forgotten or deleted by retention
--   (`todo_ids`), locked for forget_alerts.sql to rewrite without the todos' content, with what
--   their summary is made of (alerts/messages.py). After forget_wait.sql, in the forget's or
--   the retention batch's transaction.
-- params: todo_ids
-- returns: id, kind, queue, todo_id, detail (as JSON text), the endpoint and its slug per alert.
-- Uses index: alerts_todo_idx (todo_id) WHERE todo_id IS NOT NULL; endpoints_pkey.
SELECT a.id, a.kind, a.queue, a.todo_id, a.detail::text AS detail, e.slug AS endpoint,
       a.endpoint_id
  FROM alerts a
  LEFT JOIN endpoints e ON e.id = a.endpoint_id
 WHERE a.todo_id = ANY(%(todo_ids)s::text[])
 ORDER BY a.id
   FOR UPDATE OF a
