-- overview_percentiles: the median and 95th percentile of claim wait (created → claimed, first
--   attempts) and run time (claimed → ended) per endpoint and queue in the scope, over the last
--   hour (the minute rows of this minute and the 59 before) and the last day (the hour rows of
--   this hour and the 23 before), as histogram bucket numbers (todos/overview.py turns a bucket
--   into seconds): the bucket that holds the ceil(p·n)-th value.
-- params: the scope's (switchboard/scope.py, on endpoints e)
-- returns: endpoint_id, queue, win ('hour' | 'day'), kind ('wait' | 'run'), n, p50, p95.
-- Uses index: overview_minutes_pkey and overview_hours_pkey per endpoint in scope: 60 minute
--   rows and 24 hour rows per queue, each histogram unnested.
WITH eps AS (
    SELECT e.id FROM endpoints e WHERE @{scope_endpoints}
),
mins AS (
    SELECT m.endpoint_id, m.queue, m.wait_hist, m.run_hist
      FROM overview_minutes m
      JOIN eps ON eps.id = m.endpoint_id
     WHERE m.minute > date_trunc('minute', now()) - interval '60 minutes'
       AND m.run_hist IS NOT NULL
),
hours AS (
    SELECT h.endpoint_id, h.queue, h.wait_hist, h.run_hist
      FROM overview_hours h
      JOIN eps ON eps.id = h.endpoint_id
     WHERE h.hour > date_trunc('hour', now()) - interval '24 hours'
       AND h.run_hist IS NOT NULL
),
buckets AS (
    SELECT x.endpoint_id, x.queue, 'hour' AS win, 'wait' AS kind, u.k, sum(u.n) AS n
      FROM mins x CROSS JOIN unnest(x.wait_hist) WITH ORDINALITY AS u(n, k)
     GROUP BY x.endpoint_id, x.queue, u.k
    UNION ALL
    SELECT x.endpoint_id, x.queue, 'hour', 'run', u.k, sum(u.n)
      FROM mins x CROSS JOIN unnest(x.run_hist) WITH ORDINALITY AS u(n, k)
     GROUP BY x.endpoint_id, x.queue, u.k
    UNION ALL
    SELECT x.endpoint_id, x.queue, 'day', 'wait', u.k, sum(u.n)
      FROM hours x CROSS JOIN unnest(x.wait_hist) WITH ORDINALITY AS u(n, k)
     GROUP BY x.endpoint_id, x.queue, u.k
    UNION ALL
    SELECT x.endpoint_id, x.queue, 'day', 'run', u.k, sum(u.n)
      FROM hours x CROSS JOIN unnest(x.run_hist) WITH ORDINALITY AS u(n, k)
     GROUP BY x.endpoint_id, x.queue, u.k
),
running AS (
    SELECT b.*,
           sum(b.n) OVER (PARTITION BY b.endpoint_id, b.queue, b.win, b.kind ORDER BY b.k)
               AS upto,
           sum(b.n) OVER (PARTITION BY b.endpoint_id, b.queue, b.win, b.kind) AS total
      FROM buckets b
)
SELECT r.endpoint_id, r.queue, r.win, r.kind, max(r.total)::int AS n,
       min(r.k) FILTER (WHERE r.upto >= ceil(0.5 * r.total))::int AS p50,
       min(r.k) FILTER (WHERE r.upto >= ceil(0.95 * r.total))::int AS p95
  FROM running r
 WHERE r.total > 0
 GROUP BY r.endpoint_id, r.queue, r.win, r.kind
