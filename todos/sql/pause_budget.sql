-- pause_budget: pause the given queues of endpoints for a spent daily budget, until the next
--   UTC midnight (`until`), by the sweeper. Run every pass for every spent budget: the
--   database, not the sweeper's memory, says what was done today, so two sweepers or a
--   restarted one agree. A queue already paused keeps its pause (the conflict); a queue whose
--   budget pause since `day_start` an operator resumed (a human, or `manage.py queue`: anyone
--   but the sweeper) is not paused again, so the operator's resume holds for the rest of the
--   day. A budget pause the sweeper lifted today (its budget was no longer spent:
--   lift_unspent_pauses.sql) does not count: spent again, the queue is paused again.
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
                      AND p.paused_at >= %(day_start)s
                      AND p.resumed_at IS NOT NULL AND p.resumed_by <> 'sweeper')
 ORDER BY d.endpoint_id, d.queue
ON CONFLICT (endpoint_id, queue) WHERE resumed_at IS NULL DO NOTHING
RETURNING endpoint_id, queue
