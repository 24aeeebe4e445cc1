-- earliest_not_before: the earliest not_before of the queue q.queue's pending todos scheduled
-- for later (todos.not_before), for claim_empty.sql's `not_before` reason. Spliced only where
-- the todos table has that column (todos/queries.py CLAIM_EMPTY); otherwise claim_empty reads
-- NULL in its place.
-- Uses index: todos_queue_not_before_idx (endpoint_id, queue, COALESCE(not_before, …)), one
--   probe. It is on the COALESCE, which equals not_before on these rows, so that it is the one
--   index whose order gives the minimum: on not_before itself the planner could take it from
--   the sweeps' todos_not_before_idx instead, walking every endpoint's and queue's scheduled
--   todos from now on and filtering them (q.queue is a parameter to the planner, which guesses
--   that a quarter of them match), 200 ms an idle poll beside 90,000 scheduled todos
--   (todos/migrations/0024_queue_not_before_idx.py).
(SELECT min(COALESCE(t.not_before, '-infinity'::timestamptz)) FROM todos t
  WHERE t.endpoint_id = %(endpoint_id)s AND t.queue = q.queue AND t.state = 'pending'
    AND t.not_before IS NOT NULL AND (t.assignee IS NULL OR t.assignee = %(owner)s)
    AND COALESCE(t.not_before, '-infinity'::timestamptz) > now())
