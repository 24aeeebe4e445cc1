-- counts: the spans each bound todo has stored, per attempt (todo_span_counts, which store.sql
--   keeps), and which of the batch's spans are already stored (a retry, or a span re-sent with
--   a corrected end: it costs no cap), with the stored copy's received_at: the store writes the
--   re-sent span over that copy, in its partition (the key is unique with received_at only:
--   docs/decisions/0040-span-partitions.md).
-- Run after lock.sql, in its transaction, so its snapshot sees every batch committed before
--   the lock was granted.
-- The counts are one row per todo and attempt, however many spans the todo holds
--   (docs/decisions/0042-span-counts-on-rows.md). The keys are one probe each (a key is stored
--   at most once), never a join the planner may cost from a day's partition while it was still
--   empty: a plan kept for the connection would then read the whole day every batch. Each
--   probe is bounded by received_at, from `since` (lock.sql's: when the oldest of the todos was
--   created; their spans were all received after it) to this statement's start (every batch
--   this snapshot sees began before it), so that only the partitions of the days between are
--   searched, not every day span retention keeps: the kept generic plan prunes the others as
--   it starts (a custom one, behind a pooler, as it is planned), and a partition searched is an
--   index descent per key.
-- params: todo_ids (text[]); since (timestamptz; NULL reads every day); keys (json: the
--   batch's keys, [todo_id, trace_id hex, span_id hex] each, one encode in C as store.sql's
--   spans)
-- returns: what ('count' or 'stored'), todo_id, attempt_seq (NULL: spans with no attempt), n,
--   trace_id, span_id, received_at
-- Uses index: todo_span_counts_pkey (the counts); todo_spans_pkey (the keys), in the
--   partitions from `since`'s day to today's.
SELECT 'count' AS what, c.todo_id, nullif(c.attempt_seq, 0) AS attempt_seq, c.spans AS n,
       NULL::bytea AS trace_id, NULL::bytea AS span_id, NULL::timestamptz AS received_at
  FROM todo_span_counts c
 WHERE c.todo_id = ANY(%(todo_ids)s::text[])
UNION ALL
SELECT 'stored', k.todo_id, NULL, NULL, k.trace_id, k.span_id, s.received_at
  FROM jsonb_array_elements(%(keys)s::jsonb) AS e
 CROSS JOIN LATERAL (SELECT e->>0 AS todo_id, decode(e->>1, 'hex') AS trace_id,
                            decode(e->>2, 'hex') AS span_id) k
 CROSS JOIN LATERAL (
       SELECT s.received_at
         FROM todo_spans s
        WHERE s.todo_id = k.todo_id AND s.trace_id = k.trace_id AND s.span_id = k.span_id
          AND s.received_at >= coalesce(%(since)s::timestamptz, '-infinity')
          AND s.received_at <= statement_timestamp()
        LIMIT 1) s
