-- budget_statuses: every daily budget that is set (a queue's in queue_settings, an endpoint's
--   on its row, revoked endpoints left out) with what the UTC day has spent against it: the
--   sum of its usage_hours from day_start (by span start; otlp/sql/rollup.sql keeps them).
-- params: day_start (timestamptz, a UTC midnight)
-- returns: kind ('queue' | 'endpoint'), endpoint_id, queue (NULL for an endpoint), budget_usd,
--   spent_usd.
-- Uses index: usage_hours_pkey (endpoint_id, queue, hour): a range per queue; per endpoint,
--   its queues' hours of the day.
SELECT 'queue' AS kind, qs.endpoint_id, qs.queue, qs.daily_budget_usd AS budget_usd,
       COALESCE((SELECT sum(h.cost_usd) FROM usage_hours h
                  WHERE h.endpoint_id = qs.endpoint_id AND h.queue = qs.queue
                    AND h.hour >= %(day_start)s
                    AND h.hour < %(day_start)s::timestamptz + interval '1 day'), 0) AS spent_usd
  FROM queue_settings qs
 WHERE qs.daily_budget_usd IS NOT NULL
UNION ALL
SELECT 'endpoint', e.id, NULL, e.daily_budget_usd,
       COALESCE((SELECT sum(h.cost_usd) FROM usage_hours h
                  WHERE h.endpoint_id = e.id AND h.hour >= %(day_start)s
                    AND h.hour < %(day_start)s::timestamptz + interval '1 day'), 0)
  FROM endpoints e
 WHERE e.daily_budget_usd IS NOT NULL AND e.revoked_at IS NULL
 ORDER BY 2, 3 NULLS FIRST
