-- span_partitions: what the sweeper's spans step has to do to todo_spans' day partitions
--   (otlp/partitions.py): the days from today to `ahead` days on that have no partition yet,
--   and the partitions whose day ended `days` days ago or more (every row in them was
--   received more than `days` days ago). Days are UTC days, by the database's clock. A day's
--   partition is named todo_spans_pYYYYMMDD (otlp/migrations/0006_partitioned_spans.py makes
--   them so, and nothing else attaches one).
-- params: ahead (int >= 0), days (int >= 1: span_retention_days)
-- returns: one row: add (date[]: days to make), drop (date[]: days to drop), oldest first;
--   cutoff (timestamptz: spans received before it are removed, the default partition's too).
-- Uses index: pg_inherits_parent_index (the catalog: one row per partition).
WITH clock AS MATERIALIZED (
    SELECT (now() AT TIME ZONE 'UTC')::date AS today
),
held AS MATERIALIZED (
    SELECT to_date(substr(c.relname, 13), 'YYYYMMDD') AS day
      FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'todo_spans'::regclass AND c.relname ~ '^todo_spans_p[0-9]{8}$'
)
SELECT ARRAY(SELECT k.today + i
               FROM clock k, generate_series(0, %(ahead)s::int) AS i
              WHERE NOT EXISTS (SELECT 1 FROM held h WHERE h.day = k.today + i)
              ORDER BY 1) AS add,
       ARRAY(SELECT h.day
               FROM held h, clock k
              WHERE h.day < k.today - %(days)s::int
              ORDER BY 1) AS drop,
       (SELECT today - %(days)s::int FROM clock)::timestamp AT TIME ZONE 'UTC' AS cutoff
