-- overview_prune: delete the Overview's minute and hour rows older than `keep_hours`
--   (todos/overview.py KEEP_HOURS): the page reads a day at most.
-- params: keep_hours
-- returns: minutes, hours (rows deleted).
-- Uses index: overview_minutes_minute_idx, overview_hours_hour_idx.
WITH minutes AS (
    DELETE FROM overview_minutes WHERE minute < now() - %(keep_hours)s * interval '1 hour'
    RETURNING 1
),
hours AS (
    DELETE FROM overview_hours WHERE hour < now() - %(keep_hours)s * interval '1 hour'
    RETURNING 1
)
SELECT (SELECT count(*) FROM minutes) AS minutes, (SELECT count(*) FROM hours) AS hours
