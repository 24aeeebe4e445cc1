-- reprice_read: the next batch of model-call spans started since `since`, in key order
--   (manage.py reprice, otlp/reprice.py). Offline work: a scan of todo_spans (no index on
--   start_at: no live read needs one).
-- params: since, after_todo, after_trace, after_span (the last key read; '' and empty bytes
--   to start), limit
-- returns: todo_id, trace_id, span_id, start_at, received_at, model, the five token counts,
--   cost_usd.
-- Uses index: todo_spans_pkey (keyset).
SELECT s.todo_id, s.trace_id, s.span_id, s.start_at, s.received_at, s.model, s.input_tokens, s.output_tokens,
       s.cache_read_tokens, s.cache_write_tokens, s.reasoning_tokens, s.cost_usd,
       s.attributes ->> 'gen_ai.provider.name' AS provider,
       s.attributes ->> 'gen_ai.system' AS system, s.attributes ->> 'llm.provider' AS llm_provider
  FROM todo_spans s
 WHERE s.input_tokens IS NOT NULL AND s.start_at >= %(since)s
   AND (s.todo_id, s.trace_id, s.span_id) > (%(after_todo)s, %(after_trace)s, %(after_span)s)
 ORDER BY s.todo_id, s.trace_id, s.span_id
 LIMIT %(limit)s
