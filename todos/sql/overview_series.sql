-- overview_series: the Overview page's plots: per minute of the last day (this minute and the
--   1,439 before, every minute present), the attempts that ended completed and failed and the
--   summed depth samples (pending, in flight) of the scope's queues, or of one endpoint's queue
--   when `endpoint` and `queue` name one ('' for all); sampled is 0 for a minute no sample saw.
-- params: the scope's (switchboard/scope.py, on endpoints e), endpoint, queue
-- returns: minute, completed, failed, pending, in_flight, sampled, oldest first.
-- Uses index: overview_minutes_pkey (endpoint_id, queue, minute) per endpoint in scope.
WITH eps AS (
    SELECT e.id FROM endpoints e
     WHERE @{scope_endpoints} AND (%(endpoint)s = '' OR e.slug = %(endpoint)s)
),
per_minute AS (
    SELECT m.minute, sum(m.completed) AS completed, sum(m.failed) AS failed,
           sum(m.pending) FILTER (WHERE m.sampled_at IS NOT NULL) AS pending,
           sum(m.in_flight) FILTER (WHERE m.sampled_at IS NOT NULL) AS in_flight,
           count(m.sampled_at) AS sampled
      FROM overview_minutes m
      JOIN eps ON eps.id = m.endpoint_id
     WHERE m.minute > date_trunc('minute', now()) - interval '1440 minutes'
       AND (%(queue)s = '' OR m.queue = %(queue)s)
     GROUP BY m.minute
)
SELECT g.minute, coalesce(p.completed, 0)::int AS completed, coalesce(p.failed, 0)::int AS failed,
       coalesce(p.pending, 0)::int AS pending, coalesce(p.in_flight, 0)::int AS in_flight,
       coalesce(p.sampled, 0)::int AS sampled
  FROM generate_series(date_trunc('minute', now()) - interval '1439 minutes',
                       date_trunc('minute', now()), interval '1 minute') AS g(minute)
  LEFT JOIN per_minute p ON p.minute = g.minute
 ORDER BY g.minute
