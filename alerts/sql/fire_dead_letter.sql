-- fire_dead_letter: the todos dead-lettered (failed, no retry left) within the last
--   `lookback_seconds` and after the rule was made, on the endpoints and queue each rule
--   covers. A todo dead-lettered by a passed deadline is the deadline_missed rule's (its
--   `deadline` activity row is written with it, at the same instant), not this one's. The
--   subject carries the moment it was dead-lettered: a todo retried by a human and
--   dead-lettered again is a second event.
-- params: kind, lookback_seconds
-- returns: rule_id, subject, endpoint_id, queue, todo_id, detail, forgotten (the todo was
--   forgotten before this read: alerts/evaluate.py keeps only what a forgotten todo's alert may).
-- Uses index: todos_finished_idx (endpoint_id, finished_at DESC) WHERE finished_at IS NOT NULL;
--   todo_activity_pkey per todo found.
WITH rs AS (@{rule_endpoints})
SELECT rs.rule_id,
       t.id || '@' || EXTRACT(EPOCH FROM t.finished_at)::text AS subject,
       rs.endpoint_id, t.queue, t.id AS todo_id,
       jsonb_build_object('title', left(t.title, 200), 'attempts', t.attempts_total,
                          'at', t.finished_at) AS detail,
       t.forgotten_at IS NOT NULL AS forgotten
  FROM rs
  JOIN todos t
    ON t.endpoint_id = rs.endpoint_id
   AND t.finished_at >= greatest(rs.rule_created_at,
                                now() - make_interval(secs => %(lookback_seconds)s))
   AND t.state = 'failed' AND t.next_retry_at IS NULL
   AND (rs.rule_queue IS NULL OR t.queue = rs.rule_queue)
 WHERE NOT EXISTS (SELECT 1 FROM todo_activity a
                    WHERE a.todo_id = t.id AND a.kind = 'deadline' AND a.at = t.finished_at)
