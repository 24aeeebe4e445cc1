-- overview_series: the Overview page's plots, for the scope's queues, or one endpoint's queue
--   when `endpoint` and `queue` name one ('' for all): grain 'minute', every minute of the last
--   hour (this minute and the 59 before: the attempts that ended completed and failed, the
--   summed depth samples); grain 'hour', every hour of the last day (this hour and the 23
--   before: the same counts, and the sum of each queue's highest sample in the hour). Depth is
--   NULL for a minute or hour no sample saw.
-- params: the scope's (switchboard/scope.py, on endpoints e), endpoint, queue
-- returns: grain, at, completed, failed, pending, in_flight; per grain oldest first.
-- Uses index: overview_minutes_pkey and overview_hours_pkey (endpoint_id, queue, …) per
--   endpoint in scope: 60 minute rows and 24 hour rows per queue.
WITH eps AS (
    SELECT e.id FROM endpoints e
     WHERE @{scope_endpoints} AND (%(endpoint)s = '' OR e.slug = %(endpoint)s)
),
minutes AS (
    SELECT m.minute AS at, sum(m.completed) AS completed, sum(m.failed) AS failed,
           sum(m.pending) FILTER (WHERE m.sampled_at IS NOT NULL) AS pending,
           sum(m.in_flight) FILTER (WHERE m.sampled_at IS NOT NULL) AS in_flight
      FROM overview_minutes m
      JOIN eps ON eps.id = m.endpoint_id
     WHERE m.minute > date_trunc('minute', now()) - interval '60 minutes'
       AND (%(queue)s = '' OR m.queue = %(queue)s)
     GROUP BY m.minute
),
hours AS (
    SELECT h.hour AS at, sum(h.completed) AS completed, sum(h.failed) AS failed,
           sum(h.pending_max) AS pending, sum(h.in_flight_max) AS in_flight
      FROM overview_hours h
      JOIN eps ON eps.id = h.endpoint_id
     WHERE h.hour > date_trunc('hour', now()) - interval '24 hours'
       AND (%(queue)s = '' OR h.queue = %(queue)s)
     GROUP BY h.hour
)
SELECT 'minute' AS grain, g.at, coalesce(x.completed, 0)::int AS completed,
       coalesce(x.failed, 0)::int AS failed, x.pending::int AS pending,
       x.in_flight::int AS in_flight
  FROM generate_series(date_trunc('minute', now()) - interval '59 minutes',
                       date_trunc('minute', now()), interval '1 minute') AS g(at)
  LEFT JOIN minutes x ON x.at = g.at
UNION ALL
SELECT 'hour', g.at, coalesce(x.completed, 0)::int, coalesce(x.failed, 0)::int,
       x.pending::int, x.in_flight::int
  FROM generate_series(date_trunc('hour', now()) - interval '23 hours',
                       date_trunc('hour', now()), interval '1 hour') AS g(at)
  LEFT JOIN hours x ON x.at = g.at
 ORDER BY 1 DESC, 2
