-- earliest_not_before: the earliest not_before of the queue q.queue's pending todos scheduled
-- for later (todos.not_before), for claim_empty.sql's `not_before` reason. Spliced only where
-- the todos table has that column (todos/queries.py CLAIM_EMPTY); otherwise claim_empty reads
-- NULL in its place.
(SELECT min(t.not_before) FROM todos t
  WHERE t.endpoint_id = %(endpoint_id)s AND t.queue = q.queue AND t.state = 'pending'
    AND (t.assignee IS NULL OR t.assignee = %(owner)s) AND t.not_before > now())
