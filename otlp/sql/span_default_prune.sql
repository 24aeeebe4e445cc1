-- span_default_prune: delete the default partition's spans received before `cutoff` (span
--   retention for the rows that came while their day had no partition: the sweeper was away
--   for days). Row deletes, but of a partition that is empty in normal running.
-- params: cutoff (timestamptz: span_partitions.sql's)
-- returns: pruned (rows deleted).
-- Uses index: none: a scan of todo_spans_default, which holds nothing in normal running.
WITH gone AS (
    DELETE FROM todo_spans_default s WHERE s.received_at < %(cutoff)s RETURNING 1
)
SELECT count(*) AS pruned FROM gone
