-- overview_cost: what the scope's model calls cost, from usage_hours (the OTLP ingest keeps
--   them, by span start): per endpoint and queue, this UTC day and the last 24 hours (this hour
--   and the 23 before), with the tokens no price covered; and the last day's cost per hour for
--   the plot, of every queue or of one endpoint's queue (`endpoint` and `queue`, '' for all).
-- params: the scope's (switchboard/scope.py, on endpoints e), endpoint, queue
-- returns: grain ('queue' | 'hour'), endpoint_id, endpoint, revoked, queue, at (the hour),
--   cost_today, cost_day, unpriced_day, tokens_day.
-- Uses index: usage_hours_pkey (endpoint_id, queue, hour) per endpoint in scope: 24 rows a queue.
WITH eps AS (
    SELECT e.id, e.slug, e.revoked_at FROM endpoints e WHERE @{scope_endpoints}
),
rows AS (
    SELECT h.*, eps.slug, eps.revoked_at
      FROM usage_hours h JOIN eps ON eps.id = h.endpoint_id
     WHERE h.hour > date_trunc('hour', now()) - interval '24 hours'
)
SELECT 'queue' AS grain, r.endpoint_id, r.slug AS endpoint, r.revoked_at IS NOT NULL AS revoked,
       r.queue, NULL::timestamptz AS at,
       coalesce(sum(r.cost_usd) FILTER (
           WHERE r.hour >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'), 0)
         AS cost_today,
       sum(r.cost_usd) AS cost_day, sum(r.unpriced_tokens)::bigint AS unpriced_day,
       sum(r.input_tokens + r.output_tokens)::bigint AS tokens_day
  FROM rows r
 GROUP BY r.endpoint_id, r.slug, r.revoked_at, r.queue
UNION ALL
SELECT 'hour', NULL, NULL, NULL, NULL, g.at, NULL, coalesce(sum(r.cost_usd), 0),
       coalesce(sum(r.unpriced_tokens), 0)::bigint, coalesce(sum(r.input_tokens + r.output_tokens), 0)::bigint
  FROM generate_series(date_trunc('hour', now()) - interval '23 hours',
                       date_trunc('hour', now()), interval '1 hour') AS g(at)
  LEFT JOIN rows r ON r.hour = g.at AND (%(endpoint)s = '' OR r.slug = %(endpoint)s)
                  AND (%(queue)s = '' OR r.queue = %(queue)s)
 GROUP BY g.at
 ORDER BY 1 DESC, 3, 5, 6
