-- spans_for_attempt: an attempt's spans in start order, for its waterfall. Unscoped: call it
--   only for a todo an owner-scoped read has just returned (otlp/store.py).
-- params: todo_id, attempt_seq, limit
-- returns: the span rows, oldest start first, at most `limit`.
-- Uses index: idx_todo_spans_attempt, read in order.
SELECT todo_id, trace_id, span_id, parent_span_id, attempt_seq, name, kind, category, tool,
       status_code, status_message, service_name, start_at, end_at, attributes, truncated
  FROM todo_spans
 WHERE todo_id = %(todo_id)s AND attempt_seq = %(attempt_seq)s
 ORDER BY start_at, span_id
 LIMIT %(limit)s
