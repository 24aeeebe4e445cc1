-- reprice_clear_hours: drop the usage_hours from `since`'s UTC hour on, before
--   reprice_hours.sql rebuilds them, in the same transaction (manage.py reprice).
-- params: since
-- returns: cleared (rows deleted).
-- Uses index: a scan of usage_hours (small: one row per endpoint, queue and hour).
WITH gone AS (
    DELETE FROM usage_hours h
     WHERE h.hour >= date_trunc('hour', %(since)s::timestamptz AT TIME ZONE 'UTC')
                     AT TIME ZONE 'UTC'
    RETURNING 1
)
SELECT count(*) AS cleared FROM gone
