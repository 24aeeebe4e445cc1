-- counts: the spans each bound todo holds, per attempt, and which of the batch's spans are
--   already stored (a retry, or a span re-sent with a corrected end: it costs no cap), with
--   the stored copy's received_at: the store writes the re-sent span over that copy, in its
--   partition (the key is unique with received_at only: docs/decisions/0040-span-partitions.md).
-- Run after lock.sql, in its transaction, so its snapshot sees every batch committed before
--   the lock was granted.
-- Both reads are bounded by received_at, so that only the partitions of the days since the
--   batch's todos were created are read (a todo's spans are received after it exists: its
--   foreign key; and every batch this snapshot sees began before this statement did), not
--   every day span retention keeps: each partition read costs an index descent per key.
-- params: todo_ids (text[]); key_todos, key_traces, key_spans (the batch's keys, as arrays)
-- returns: what ('count' or 'stored'), todo_id, attempt_seq, n, trace_id, span_id, received_at
-- Uses index: todos_pkey (the bound); idx_todo_spans_attempt (the counts), todo_spans_pkey
--   (the keys), in the partitions of the days since the oldest of the todos was created.
WITH since AS MATERIALIZED (
    SELECT min(t.created_at) AS at FROM todos t WHERE t.id = ANY(%(todo_ids)s::text[])
)
SELECT 'count' AS what, s.todo_id, s.attempt_seq, count(*) AS n,
       NULL::bytea AS trace_id, NULL::bytea AS span_id, NULL::timestamptz AS received_at
  FROM todo_spans s
 WHERE s.todo_id = ANY(%(todo_ids)s::text[])
 GROUP BY s.todo_id, s.attempt_seq
UNION ALL
SELECT 'stored', s.todo_id, NULL, NULL, s.trace_id, s.span_id, s.received_at
  FROM unnest(%(key_todos)s::text[], %(key_traces)s::bytea[], %(key_spans)s::bytea[])
       AS k(todo_id, trace_id, span_id)
  JOIN todo_spans s
    ON s.todo_id = k.todo_id AND s.trace_id = k.trace_id AND s.span_id = k.span_id
   AND s.received_at >= (SELECT at FROM since) AND s.received_at <= statement_timestamp()
