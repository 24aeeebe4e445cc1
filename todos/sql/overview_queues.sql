-- overview_queues: the Overview page's table, one row per endpoint and queue in the scope with an
--   hour row in the last day (todos/overview.py): the latest depth sample of the last day, and
--   the attempts that ended completed and failed in the last hour (the minute rows of this
--   minute and the 59 before) and the last day (the hour rows of this hour and the 23 before).
-- params: the scope's (switchboard/scope.py, on endpoints e)
-- returns: endpoint_id, endpoint (slug), revoked, queue, sampled_at, pending, in_flight,
--   retry_due, dead, oldest_pending_at, completed_hour, failed_hour, completed_day, failed_day.
-- Uses index: overview_hours_pkey and overview_minutes_pkey (endpoint_id, queue, …) per
--   endpoint in scope: 24 hour rows and 60 minute rows per queue, and the newest sampled minute
--   row (a backward scan that stops at the first), whatever the number of todos.
WITH eps AS (
    SELECT e.id, e.slug, e.revoked_at FROM endpoints e WHERE @{scope_endpoints}
),
days AS (
    SELECT h.endpoint_id, h.queue, sum(h.completed) AS completed_day,
           sum(h.failed) AS failed_day
      FROM overview_hours h
      JOIN eps ON eps.id = h.endpoint_id
     WHERE h.hour > date_trunc('hour', now()) - interval '24 hours'
     GROUP BY h.endpoint_id, h.queue
),
hours AS (
    SELECT m.endpoint_id, m.queue, sum(m.completed) AS completed_hour,
           sum(m.failed) AS failed_hour
      FROM overview_minutes m
      JOIN eps ON eps.id = m.endpoint_id
     WHERE m.minute > date_trunc('minute', now()) - interval '60 minutes'
     GROUP BY m.endpoint_id, m.queue
)
SELECT d.endpoint_id, eps.slug AS endpoint, eps.revoked_at IS NOT NULL AS revoked, d.queue,
       l.sampled_at, coalesce(l.pending, 0) AS pending, coalesce(l.in_flight, 0) AS in_flight,
       coalesce(l.retry_due, 0) AS retry_due, coalesce(l.dead, 0) AS dead, l.oldest_pending_at,
       coalesce(h.completed_hour, 0)::int AS completed_hour,
       coalesce(h.failed_hour, 0)::int AS failed_hour,
       d.completed_day::int AS completed_day, d.failed_day::int AS failed_day
  FROM days d
  JOIN eps ON eps.id = d.endpoint_id
  LEFT JOIN hours h ON h.endpoint_id = d.endpoint_id AND h.queue = d.queue
  LEFT JOIN LATERAL (
        SELECT m.sampled_at, m.pending, m.in_flight, m.retry_due, m.dead, m.oldest_pending_at
          FROM overview_minutes m
         WHERE m.endpoint_id = d.endpoint_id AND m.queue = d.queue
           AND m.minute > date_trunc('minute', now()) - interval '1440 minutes'
           AND m.sampled_at IS NOT NULL
         ORDER BY m.minute DESC
         LIMIT 1
       ) l ON true
 ORDER BY eps.slug, d.queue
