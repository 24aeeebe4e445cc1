-- counts: the spans each bound todo holds, per attempt, and which of the batch's spans are
--   already stored (a retry, or a span re-sent with a corrected end: it costs no cap), with
--   the stored copy's received_at: the store writes the re-sent span over that copy, in its
--   partition (the key is unique with received_at only: docs/decisions/0040-span-partitions.md).
-- Run after lock.sql, in its transaction, so its snapshot sees every batch committed before
--   the lock was granted.
-- Both reads are bounded by received_at, from `since` (lock.sql's: when the oldest of the
--   todos was created; their spans were all received after it) to this statement's start
--   (every batch this snapshot sees began before it), so that the planner and the executor
--   open only the partitions of the days between, not every day span retention keeps: a
--   partition costs planning time and an index descent per key.
-- params: todo_ids (text[]); since (timestamptz; NULL reads every day); key_todos, key_traces,
--   key_spans (the batch's keys, as arrays)
-- returns: what ('count' or 'stored'), todo_id, attempt_seq, n, trace_id, span_id, received_at
-- Uses index: idx_todo_spans_attempt (the counts), todo_spans_pkey (the keys), in the
--   partitions from `since`'s day to today's.
SELECT 'count' AS what, s.todo_id, s.attempt_seq, count(*) AS n,
       NULL::bytea AS trace_id, NULL::bytea AS span_id, NULL::timestamptz AS received_at
  FROM todo_spans s
 WHERE s.todo_id = ANY(%(todo_ids)s::text[])
   AND s.received_at >= coalesce(%(since)s::timestamptz, '-infinity')
   AND s.received_at <= statement_timestamp()
 GROUP BY s.todo_id, s.attempt_seq
UNION ALL
SELECT 'stored', s.todo_id, NULL, NULL, s.trace_id, s.span_id, s.received_at
  FROM unnest(%(key_todos)s::text[], %(key_traces)s::bytea[], %(key_spans)s::bytea[])
       AS k(todo_id, trace_id, span_id)
  JOIN todo_spans s
    ON s.todo_id = k.todo_id AND s.trace_id = k.trace_id AND s.span_id = k.span_id
   AND s.received_at >= coalesce(%(since)s::timestamptz, '-infinity')
   AND s.received_at <= statement_timestamp()
