-- soak_spans: every stored span's key, for bench/soak.py's check that each span the receiver
--   acknowledged is stored.
-- params: none
-- returns: trace_id, span_id (bytes).
-- Uses index: none: a scan of todo_spans.
SELECT s.trace_id, s.span_id FROM todo_spans s
