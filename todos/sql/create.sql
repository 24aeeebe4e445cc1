-- create: a new pending todo on a live endpoint's queue, and its search text; rings the doorbell.
--   The search text (todo_search, migrations/0014) is written here once: id, title and payload
--   never change after, so no later transition touches it (docs/decisions/0019-todo-search.md).
-- params: id, endpoint_id, queue, title, event_id, payload (jsonb), work_order, routing_trace
--   (jsonb), assignee, max_attempts
-- returns: the todo; no row when the endpoint is unknown or revoked (and no search row).
-- Uses index: endpoints_pkey; todo_search_pkey and todo_search_text_idx take the new row.
WITH upd AS (
    INSERT INTO todos (id, endpoint_id, queue, title, event_id, payload, work_order,
                       routing_trace, assignee, max_attempts)
    SELECT %(id)s, e.id, %(queue)s, %(title)s, %(event_id)s, %(payload)s, %(work_order)s,
           %(routing_trace)s, %(assignee)s, %(max_attempts)s
      FROM endpoints e
     WHERE e.id = %(endpoint_id)s AND e.revoked_at IS NULL
    RETURNING *
),
search AS (
    INSERT INTO todo_search (todo_id, text)
    SELECT upd.id, todo_search_text(upd.id, upd.title, upd.payload) FROM upd
)
SELECT upd.*, NULL::int AS attempt_seq, @{notify_ready} AS rung FROM upd
