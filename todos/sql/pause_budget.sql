-- pause_budget: pause the given queues of endpoints for a spent daily budget, until the next
--   UTC midnight (`until`), by the sweeper. A queue already paused keeps its pause; a queue
--   that a budget paused since `day_start` is not paused again, so an operator's resume holds
--   for the rest of the day.
-- params: endpoint_ids (uuid[]), queues (text[]), reason ('queue_budget' | 'endpoint_budget'),
--   day_start, until
-- returns: endpoint_id, queue of each pause opened.
-- Uses index: queue_pauses_open_idx (the conflict target); queue_pauses by endpoint and queue
--   for the day's earlier budget pause (a queue's pauses are few).
INSERT INTO queue_pauses (endpoint_id, queue, paused_by_kind, paused_by, reason, until)
SELECT d.endpoint_id, d.queue, 'system', 'sweeper', %(reason)s, %(until)s
  FROM unnest(%(endpoint_ids)s::uuid[], %(queues)s::text[]) AS d(endpoint_id, queue)
 WHERE NOT EXISTS (SELECT 1 FROM queue_pauses p
                    WHERE p.endpoint_id = d.endpoint_id AND p.queue = d.queue
                      AND p.reason IN ('queue_budget', 'endpoint_budget')
                      AND p.paused_at >= %(day_start)s)
 ORDER BY d.endpoint_id, d.queue
ON CONFLICT (endpoint_id, queue) WHERE resumed_at IS NULL DO NOTHING
RETURNING endpoint_id, queue
