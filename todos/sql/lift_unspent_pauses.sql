-- lift_unspent_pauses: close the open budget pauses (reason 'queue_budget' or
--   'endpoint_budget') whose budget is no longer spent (a `manage.py reprice` lowered the
--   day's spend, the budget was raised or cleared), by the sweeper as its midnight lift is,
--   waking each queue's claimers as a resume does. A pause whose own budget is no longer spent
--   but whose queue the other budget still covers (the queue's own, or its endpoint's) stays,
--   its reason now that budget's, so what the Board says of it stays true.
-- params: endpoint_ids (uuid[]), queues (text[]): the budgets spent now, as the sweeper read
--   them (todos/budgets.py); a NULL queue is the endpoint's budget.
-- returns: endpoint_id, queue, notified (the queue-wide ring, announced after commit) per pause
--   lifted (not those relabelled).
-- Uses index: queue_pauses_open_idx (open pauses are few).
WITH spent AS (
    SELECT * FROM unnest(%(endpoint_ids)s::uuid[], %(queues)s::text[]) AS s(endpoint_id, queue)
),
stale AS (
    SELECT qp.id, x.queue_spent, x.endpoint_spent
      FROM queue_pauses qp
     CROSS JOIN LATERAL (
           SELECT EXISTS (SELECT 1 FROM spent s
                           WHERE s.endpoint_id = qp.endpoint_id AND s.queue = qp.queue)
                  AS queue_spent,
                  EXISTS (SELECT 1 FROM spent s
                           WHERE s.endpoint_id = qp.endpoint_id AND s.queue IS NULL)
                  AS endpoint_spent
     ) x
     WHERE qp.resumed_at IS NULL AND qp.reason IN ('queue_budget', 'endpoint_budget')
       AND NOT CASE qp.reason WHEN 'queue_budget' THEN x.queue_spent ELSE x.endpoint_spent END
),
upd AS (
    UPDATE queue_pauses qp
       SET reason = CASE WHEN st.queue_spent THEN 'queue_budget'
                         WHEN st.endpoint_spent THEN 'endpoint_budget'
                         ELSE qp.reason END,
           resumed_at = CASE WHEN NOT (st.queue_spent OR st.endpoint_spent) THEN now() END,
           resumed_by_kind = CASE WHEN NOT (st.queue_spent OR st.endpoint_spent) THEN 'system' END,
           resumed_by = CASE WHEN NOT (st.queue_spent OR st.endpoint_spent) THEN 'sweeper' END
      FROM stale st
     WHERE qp.id = st.id AND qp.resumed_at IS NULL
    RETURNING qp.endpoint_id, qp.queue, qp.resumed_at IS NOT NULL AS lifted
)
SELECT upd.endpoint_id, upd.queue,
       json_build_object('kind', 'rung', 'todo_id', '', 'endpoint_id', upd.endpoint_id,
                         'queue', upd.queue, 'reason', 'resumed')::text AS notified
  FROM upd
 WHERE upd.lifted
 ORDER BY upd.endpoint_id, upd.queue
