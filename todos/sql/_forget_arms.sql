-- forget_arms: erase what the todos a statement's `cur` locked (id, from_state, event_id) held,
--   and leave each a tombstone. Kept: id, endpoint, queue, state, timestamps, counts (attempts,
--   notes, spans dropped), each attempt's claimer, times and outcome, each activity row's kind,
--   actor and time with the action it records (its detail keeps only action, from, to, bulk).
--   Erased: the title, payload, work order, result, question (input_request), routing trace and
--   dedupe key; each attempt's summary and artifact; each activity row's message (notes, reasons)
--   and the rest of its detail (answers, questions); the search text; and the body and headers
--   of the delivery that created it (events: a webhook's payload). Spans are the OTLP store's to
--   delete (otlp/store.py), in the same transaction (activity/forget.py).
--   One text for forget.sql and bulk_forget.sql.
upd AS (
    UPDATE todos t
       SET @{activity_bump}title = '', payload = '{}'::jsonb, work_order = '', result = NULL,
           input_request = NULL, routing_trace = NULL, dedupe_key = NULL,
           forgotten_at = now(), forgotten_by = %(actor_ref)s, updated_at = now()
      FROM cur
     WHERE t.id = cur.id
    RETURNING t.*, cur.from_state
),
erased_attempts AS (
    UPDATE todo_attempts a
       SET summary = NULL, summary_truncated = false, artifact = NULL
      FROM upd
     WHERE a.todo_id = upd.id AND (a.summary IS NOT NULL OR a.artifact IS NOT NULL)
    RETURNING a.todo_id
),
erased_activity AS (
    UPDATE todo_activity v
       SET message = NULL, truncated = false,
           detail = (SELECT COALESCE(jsonb_object_agg(d.key, d.value), '{}'::jsonb)
                       FROM jsonb_each(v.detail) AS d
                      WHERE d.key IN ('action', 'from', 'to', 'bulk'))
      FROM upd
     WHERE v.todo_id = upd.id
    RETURNING v.todo_id
),
erased_search AS (
    DELETE FROM todo_search s USING upd WHERE s.todo_id = upd.id RETURNING s.todo_id
),
erased_delivery AS (
    UPDATE events e
       SET payload = NULL, headers = '{}'::jsonb, body_prefix = NULL, routing_trace = '[]'::jsonb
      FROM upd
     WHERE e.id = upd.event_id
    RETURNING e.id
)
