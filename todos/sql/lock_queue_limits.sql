-- lock_queue_limits: lock the settings rows of an agent's claim's limited queues, in the order
--   the claim locks them (_queue_limited.sql), ahead of the claim in the same transaction. The
--   claim's snapshot is then taken after the lock, so its count of held todos is exact: the
--   retry of a claim that found its count stale (todos/lifecycle/agent.py).
-- params: endpoint_id, queues (text[]), or the todo's id for a claim by id (@{limits_queues})
-- returns: one row per limited queue locked (queue, max_in_flight); none when the queues limit
--   nothing (the caller then has nothing to retry).
-- Uses index: queue_settings_queue_key (endpoint_id, queue).
SELECT qs.queue, qs.max_in_flight
  FROM queue_settings qs
 WHERE qs.endpoint_id = @{limits_endpoint}
       AND qs.queue = ANY (CAST(@{limits_queues} AS text[]))
   AND (qs.max_in_flight IS NOT NULL OR qs.claims_per_minute IS NOT NULL)
 ORDER BY qs.queue
   FOR UPDATE
