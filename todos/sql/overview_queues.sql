-- overview_queues: the Overview page's table, one row per endpoint and queue in the scope with a
--   row in the last day (todos/overview.py): the latest depth sample, and the attempts that
--   ended completed and failed in the last hour (this minute and the 59 before) and the last
--   day (this minute and the 1,439 before).
-- params: the scope's (switchboard/scope.py, on endpoints e)
-- returns: endpoint_id, endpoint (slug), revoked, queue, sampled_at, pending, in_flight, retry_due, dead,
--   oldest_pending_at, completed_hour, failed_hour, completed_day, failed_day.
-- Uses index: overview_minutes_pkey (endpoint_id, queue, minute) per endpoint in scope: at most
--   1,440 rows per queue, whatever the number of todos.
WITH eps AS (
    SELECT e.id, e.slug, e.revoked_at FROM endpoints e WHERE @{scope_endpoints}
),
recent AS (
    SELECT m.*
      FROM overview_minutes m
      JOIN eps ON eps.id = m.endpoint_id
     WHERE m.minute > date_trunc('minute', now()) - interval '1440 minutes'
),
latest AS (
    SELECT DISTINCT ON (r.endpoint_id, r.queue)
           r.endpoint_id, r.queue, r.sampled_at, r.pending, r.in_flight, r.retry_due, r.dead,
           r.oldest_pending_at
      FROM recent r
     WHERE r.sampled_at IS NOT NULL
     ORDER BY r.endpoint_id, r.queue, r.minute DESC
),
sums AS (
    SELECT r.endpoint_id, r.queue,
           coalesce(sum(r.completed) FILTER (
               WHERE r.minute > date_trunc('minute', now()) - interval '60 minutes'), 0)
               AS completed_hour,
           coalesce(sum(r.failed) FILTER (
               WHERE r.minute > date_trunc('minute', now()) - interval '60 minutes'), 0)
               AS failed_hour,
           sum(r.completed) AS completed_day, sum(r.failed) AS failed_day
      FROM recent r
     GROUP BY r.endpoint_id, r.queue
)
SELECT s.endpoint_id, eps.slug AS endpoint, eps.revoked_at IS NOT NULL AS revoked, s.queue, l.sampled_at,
       coalesce(l.pending, 0) AS pending, coalesce(l.in_flight, 0) AS in_flight,
       coalesce(l.retry_due, 0) AS retry_due, coalesce(l.dead, 0) AS dead,
       l.oldest_pending_at, s.completed_hour::int, s.failed_hour::int, s.completed_day::int,
       s.failed_day::int
  FROM sums s
  JOIN eps ON eps.id = s.endpoint_id
  LEFT JOIN latest l ON l.endpoint_id = s.endpoint_id AND l.queue = s.queue
 ORDER BY eps.slug, s.queue
