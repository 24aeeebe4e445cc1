-- spans_for_todo: the first `per_attempt` spans (in start order) of each of a todo's attempts,
--   with each attempt's span count and token totals, for the trail page's waterfalls in one
--   read. Unscoped: call it only for a todo an owner-scoped read has just returned
--   (activity/trail.py does).
-- params: todo_id, seqs (int[]: the attempts the page shows), per_attempt, since (the todo's
--   creation, or NULL: its spans were all received after it, so the partitions of the days
--   before it are not read)
-- returns: one row per span: its attempt's `seq`, `total`, `input_tokens` and
--   `output_tokens`, then the span's columns in SpanView's order (read as tuples,
--   otlp/store.py); only the columns the waterfall draws (the attributes
--   stay in the database: decoding thousands of them was most of the page's time); the ids
--   as hex text, as the page keys them (bytea would be decoded, then re-encoded, per span),
--   which sorts as the bytes do in the "C" collation. Every row repeats its attempt's
--   totals: the token sums come as text (numeric would load as a Decimal twice a span; a sum
--   of int64 counts may pass bigint); read once an attempt.
-- Tokens: each span counts the first of its attribute names (current name first, then the
--   older ones) that holds a non-negative integer; a string, a boolean or a fraction counts
--   nothing (sb_token_count, otlp/migrations/0002_token_count.py), and every span of the
--   attempt counts, drawn or not.
-- Uses index: idx_todo_spans_attempt (todo_id, attempt_seq, start_at), read in order per
--   attempt, in each partition from `since`'s day on; the totals read the attempt's span rows
--   once.
SELECT a.seq, n.total, n.input_tokens, n.output_tokens, s.*
  FROM unnest(%(seqs)s::int[]) AS a(seq)
 CROSS JOIN LATERAL (
        SELECT count(*) AS total,
               coalesce(sum(coalesce(
                   sb_token_count(c.attributes -> 'gen_ai.usage.input_tokens'),
                   sb_token_count(c.attributes -> 'llm.token_count.prompt'),
                   sb_token_count(c.attributes -> 'gen_ai.usage.prompt_tokens'))), 0)::text
                 AS input_tokens,
               coalesce(sum(coalesce(
                   sb_token_count(c.attributes -> 'gen_ai.usage.output_tokens'),
                   sb_token_count(c.attributes -> 'llm.token_count.completion'),
                   sb_token_count(c.attributes -> 'gen_ai.usage.completion_tokens'))), 0)::text
                 AS output_tokens
          FROM todo_spans c
         WHERE c.todo_id = %(todo_id)s AND c.attempt_seq = a.seq
           AND c.received_at >= coalesce(%(since)s::timestamptz, '-infinity')) n
 CROSS JOIN LATERAL (
        SELECT encode(trace_id, 'hex') AS trace_id, encode(span_id, 'hex') AS span_id,
               encode(parent_span_id, 'hex') AS parent_span_id, name, category, tool,
               status_code, start_at, end_at
          FROM todo_spans t
         WHERE t.todo_id = %(todo_id)s AND t.attempt_seq = a.seq
           AND t.received_at >= coalesce(%(since)s::timestamptz, '-infinity')
         ORDER BY t.start_at, t.span_id
         LIMIT %(per_attempt)s) s
 ORDER BY a.seq, s.start_at, s.span_id COLLATE "C"
