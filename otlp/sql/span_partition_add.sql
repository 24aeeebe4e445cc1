-- span_partition_add: make a day's partition of todo_spans unless it exists
--   (sb_span_partition_add, otlp/migrations/0006_partitioned_spans.py: standalone, the day's
--   rows moved in from the default partition, then attached). Its own transaction; a lock not
--   granted within `lock_timeout` fails the statement (SQLSTATE 55P03), changing nothing:
--   the step tries again at its next run.
-- params: day (date), lock_timeout (text, e.g. '200ms')
-- returns: added (false: it existed).
-- Uses index: none (DDL; the default partition is scanned for the day's rows, and it is
--   empty unless the sweeper was away for days).
WITH cfg AS (
    SELECT set_config('lock_timeout', %(lock_timeout)s, true) AS previous
)
SELECT sb_span_partition_add(%(day)s::date) AS added FROM cfg
