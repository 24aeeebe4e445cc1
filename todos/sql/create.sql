-- create: a new pending todo on a live endpoint's queue, and its search text; rings the doorbell
--   when it is claimable now (a todo with a later not_before is announced as changed, and rung
--   by the sweeper once due: ring_due.sql's `not_before` scan).
--   The search text (todo_search, migrations/0014) is written here once: id, title and payload
--   never change after, so no later transition touches it (docs/decisions/0019-todo-search.md).
--   A dedupe_key already held by an unfinished todo of the endpoint inserts nothing
--   (ON CONFLICT on todos_dedupe_idx; a racing create waits for the other's commit, then
--   finds the conflict): the caller reads that todo with dedupe_hit.sql.
-- params: id, endpoint_id, queue, title, event_id, payload (jsonb), work_order, routing_trace
--   (jsonb), assignee, max_attempts, priority, not_before, start_by, finish_by,
--   run_timeout_seconds, dedupe_key, max_cost_usd (NULL: the queue's default_max_cost_usd,
--   one probe of queue_settings' key, else no cap)
-- returns: the todo; no row when the endpoint is unknown or revoked, or the dedupe key is held
--   (and no search row).
-- The queue is typed `::text` where it is inserted: the column is a domain (todo_queue,
--   switchboard/lib/domains.py), and a parameter read both as it and in a text comparison
--   must be given one type.
-- Uses index: endpoints_pkey; queue_settings_queue_key; todos_dedupe_idx; todo_search_pkey and todo_search_text_idx take
--   the new row.
WITH upd AS (
    INSERT INTO todos (id, endpoint_id, queue, title, event_id, payload, work_order,
                       routing_trace, assignee, max_attempts, priority, not_before, start_by,
                       finish_by, run_timeout_seconds, dedupe_key, max_cost_usd)
    SELECT %(id)s, e.id, %(queue)s::text, %(title)s, %(event_id)s, %(payload)s, %(work_order)s,
           %(routing_trace)s, %(assignee)s, %(max_attempts)s, %(priority)s, %(not_before)s,
           %(start_by)s, %(finish_by)s, %(run_timeout_seconds)s, %(dedupe_key)s,
           COALESCE(%(max_cost_usd)s::numeric,
                    (SELECT qs.default_max_cost_usd FROM queue_settings qs
                      WHERE qs.endpoint_id = e.id AND qs.queue = %(queue)s))
      FROM endpoints e
     WHERE e.id = %(endpoint_id)s AND e.revoked_at IS NULL
        ON CONFLICT (endpoint_id, dedupe_key) WHERE dedupe_key IS NOT NULL AND finished_at IS NULL
        DO NOTHING
    RETURNING *
),
search AS (
    INSERT INTO todo_search (todo_id, text)
    SELECT upd.id, todo_search_text(upd.id, upd.title, upd.payload) FROM upd
)
SELECT upd.*, NULL::int AS attempt_seq,
       CASE WHEN upd.not_before IS NULL OR upd.not_before <= now() THEN @{notify_ready}
            ELSE @{notify_changed} END AS notified
  FROM upd
