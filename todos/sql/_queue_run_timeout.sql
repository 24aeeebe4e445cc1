-- queue_run_timeout: the default run timeout of the todo t's queue (queue_settings), NULL when
-- its operator set none. A lease cap reads COALESCE(t.run_timeout_seconds, @{queue_run_timeout}):
-- the todo's own first, then its queue's (docs/decisions/0028-queue-limits.md).
-- Uses index: queue_settings_queue_key (endpoint_id, queue).
(SELECT qs.run_timeout_seconds FROM queue_settings qs
  WHERE qs.endpoint_id = t.endpoint_id AND qs.queue = t.queue)
