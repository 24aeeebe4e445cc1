-- reprice_hours: rebuild usage_hours from `since`'s UTC hour on from the spans received from
--   then on (the hour a span's usage counts in: store.sql), after reprice_clear_hours.sql
--   (manage.py reprice; otlp/reprice.py passes the earliest hour a repriced span counts in).
-- params: since
-- returns: hours (rows written).
-- Uses index: todos_pkey per span; the partitions of todo_spans from `since` on.
WITH hours AS (
    INSERT INTO usage_hours (endpoint_id, queue, hour, input_tokens, output_tokens,
                             cache_read_tokens, cache_write_tokens, reasoning_tokens,
                             unpriced_tokens, cost_usd)
    SELECT t.endpoint_id, t.queue,
           date_trunc('hour', s.received_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
           sum(s.input_tokens), sum(s.output_tokens), sum(s.cache_read_tokens),
           sum(s.cache_write_tokens), sum(s.reasoning_tokens),
           sum(CASE WHEN s.cost_usd IS NULL THEN s.input_tokens + s.output_tokens ELSE 0 END),
           coalesce(sum(s.cost_usd), 0)
      FROM todo_spans s JOIN todos t ON t.id = s.todo_id
     WHERE s.input_tokens IS NOT NULL
       AND s.received_at >= date_trunc('hour', %(since)s::timestamptz AT TIME ZONE 'UTC')
                            AT TIME ZONE 'UTC'
     GROUP BY 1, 2, 3
    RETURNING 1
)
SELECT count(*) AS hours FROM hours
