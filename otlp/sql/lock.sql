-- lock: serialise the batches of each bound todo before counting its spans: first each todo's
--   advisory lock (transaction-level, keyed by the hash of its id, taken in key order), then
--   each todo's newest attempt row, in todo order. Every batch for a todo takes that todo's
--   advisory lock first, so two batches for one todo count and insert one after the other:
--   neither passes a cap the other filled, and a span both carry is stored once (no unique
--   index on the span's key alone can say so on a table partitioned by received_at:
--   docs/decisions/0040-span-partitions.md). The attempt row keeps the store's later updates
--   of attempts in the order every batch takes them (otlp/store.py sets out why this row and
--   nothing else of the lifecycle's is locked). Two ids sharing a hash share a lock: more
--   waiting, never less.
-- First it sets two things for the rest of the batch's transaction (it is the first statement
--   run in it): the commit does not wait for its WAL flush (otlp/store.py,
--   docs/decisions/0010-spans-commit-asynchronously.md), and the statements after it run their
--   kept generic plans when statements are prepared (`kept_plans`; not behind a transaction
--   pooler, where every statement is sent unnamed and a forced generic plan would be planned
--   anew each time without pruning the days before `since`): custom ones made store.sql plan
--   anew every batch, and counts.sql and store.sql read todo_spans by one probe per key, a plan
--   no day's statistics can turn into a scan (docs/decisions/0042-span-counts-on-rows.md).
-- Also returns when the oldest of the todos was created: none of their spans was received
--   before it (their foreign key), so counts.sql reads only the partitions of the days since.
-- params: lock_class (int: the advisory key's first half, otlp/store.py), todo_ids (text[],
--   sorted), kept_plans (boolean: statements are prepared on this connection)
-- returns: one row: since (timestamptz, NULL when no todo was found), locked (attempt rows).
-- Uses index: todos_pkey, todo_attempts_pkey.
WITH configured AS MATERIALIZED (
    SELECT set_config('synchronous_commit', 'off', true) AS sync,
           set_config('plan_cache_mode',
                      CASE WHEN %(kept_plans)s THEN 'force_generic_plan'
                           ELSE current_setting('plan_cache_mode') END, true) AS plans
),
keyed AS MATERIALIZED (
    SELECT pg_advisory_xact_lock(%(lock_class)s::int, k.key) AS locked
      FROM (SELECT DISTINCT hashtext(id) AS key
              FROM unnest(%(todo_ids)s::text[]) AS id
             ORDER BY 1) k
     WHERE (SELECT count(*) FROM configured) >= 0
),
locked AS MATERIALIZED (
    SELECT a.todo_id, a.seq
      FROM todos t
      JOIN todo_attempts a ON a.todo_id = t.id AND a.seq = t.attempts_total
     WHERE t.id = ANY(%(todo_ids)s::text[]) AND (SELECT count(*) FROM keyed) >= 0
     ORDER BY a.todo_id
       FOR UPDATE OF a
)
SELECT (SELECT count(*) FROM locked) AS locked,
       (SELECT min(t.created_at) FROM todos t WHERE t.id = ANY(%(todo_ids)s::text[])) AS since
