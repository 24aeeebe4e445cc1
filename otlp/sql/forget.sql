-- forget: delete the spans and trace bindings of forgotten todos (activity/forget.py, in the
--   transaction that erased the todos). The todos' spans_dropped counts stay: they are counts.
-- params: ids (text[])
-- returns: one row: spans (how many were deleted).
-- Uses index: todo_spans_pkey (todo_id, trace_id, span_id); todo_trace_bindings_pkey (todo_id, …).
WITH bindings AS (
    DELETE FROM todo_trace_bindings b WHERE b.todo_id = ANY(%(ids)s::text[]) RETURNING 1
),
spans AS (
    DELETE FROM todo_spans s WHERE s.todo_id = ANY(%(ids)s::text[]) RETURNING 1
)
SELECT (SELECT count(*) FROM spans) AS spans, (SELECT count(*) FROM bindings) AS bindings
