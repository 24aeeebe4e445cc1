-- forget: delete the spans, trace bindings and span counts of forgotten todos
--   (activity/forget.py, in the transaction that erased the todos). The todos' spans_dropped
--   counts stay: they count what was refused, not what is stored. Forget takes no batch's
--   advisory lock (otlp/store.py): a batch for the todo committing after this statement's
--   snapshot keeps its spans, as before, and its counts are gone with the rest; forget is for
--   finished todos, whose agents have stopped sending.
-- params: ids (text[])
-- returns: one row: spans (how many were deleted).
-- Uses index: todo_spans_pkey (todo_id, trace_id, span_id); todo_trace_bindings_pkey and
--   todo_span_counts_pkey (todo_id, …).
WITH bindings AS (
    DELETE FROM todo_trace_bindings b WHERE b.todo_id = ANY(%(ids)s::text[]) RETURNING 1
),
counts AS (
    DELETE FROM todo_span_counts c WHERE c.todo_id = ANY(%(ids)s::text[]) RETURNING 1
),
spans AS (
    DELETE FROM todo_spans s WHERE s.todo_id = ANY(%(ids)s::text[]) RETURNING 1
)
SELECT (SELECT count(*) FROM spans) AS spans, (SELECT count(*) FROM bindings) AS bindings,
       (SELECT count(*) FROM counts) AS counts
