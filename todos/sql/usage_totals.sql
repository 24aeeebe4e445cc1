-- usage_totals: tokens by type and cost per endpoint and queue, summed over every usage_hours
--   row, for /metrics' switchboard_tokens_total and switchboard_cost_usd_total (todos/gauges.py).
--   Not owner-scoped: it feeds /metrics. Run at most once per SWITCHBOARD_QUEUE_METRICS_SECONDS
--   per process, never per scrape; the `limit` costliest queues are kept, so the series stay
--   bounded.
-- params: limit
-- returns: endpoint (slug), queue, input, output, cache_read, cache_write, reasoning, unpriced
--   (token sums), cost_usd (text: exact).
-- Uses index: a scan of usage_hours (one row per endpoint, queue and hour).
SELECT e.slug AS endpoint, u.queue, u.input, u.output, u.cache_read, u.cache_write,
       u.reasoning, u.unpriced, u.cost_usd::text AS cost_usd
  FROM (SELECT h.endpoint_id, h.queue, sum(h.input_tokens) AS input,
               sum(h.output_tokens) AS output, sum(h.cache_read_tokens) AS cache_read,
               sum(h.cache_write_tokens) AS cache_write, sum(h.reasoning_tokens) AS reasoning,
               sum(h.unpriced_tokens) AS unpriced, sum(h.cost_usd) AS cost_usd
          FROM usage_hours h
         GROUP BY h.endpoint_id, h.queue) u
  JOIN endpoints e ON e.id = u.endpoint_id
 ORDER BY u.cost_usd DESC, e.slug, u.queue
 LIMIT %(limit)s
