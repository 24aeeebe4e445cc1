-- span_partition_drop: drop a day's partition of todo_spans, its rows with it
--   (sb_span_partition_drop, otlp/migrations/0006_partitioned_spans.py): span retention, a
--   whole day in one catalog change, no row deleted one by one. Its own transaction; a lock
--   not granted within `lock_timeout` fails the statement (SQLSTATE 55P03), changing nothing.
-- params: day (date), lock_timeout (text)
-- returns: dropped (false: there was no such partition).
-- Uses index: none (DDL).
WITH cfg AS (
    SELECT set_config('lock_timeout', %(lock_timeout)s, true) AS previous
)
SELECT sb_span_partition_drop(%(day)s::date) AS dropped FROM cfg
