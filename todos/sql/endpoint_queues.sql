-- endpoint_queues: the queues of an endpoint that an endpoint budget's pause covers: those
--   with unfinished todos, with settings, or with usage today. Run only for an endpoint past
--   its daily budget, every sweeper pass while it is (todos/sweeps.py).
-- params: endpoint_id, day_start
-- returns: queue.
-- Uses index: queue_settings_queue_key, usage_hours_pkey; the endpoint's todos (a scan of its
--   unfinished ones).
SELECT t.queue FROM todos t WHERE t.endpoint_id = %(endpoint_id)s AND t.finished_at IS NULL
UNION
SELECT qs.queue FROM queue_settings qs WHERE qs.endpoint_id = %(endpoint_id)s
UNION
SELECT h.queue FROM usage_hours h WHERE h.endpoint_id = %(endpoint_id)s AND h.hour >= %(day_start)s
ORDER BY 1
