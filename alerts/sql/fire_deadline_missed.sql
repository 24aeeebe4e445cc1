-- fire_deadline_missed: the todos the sweeper dead-lettered for a passed start_by or finish_by
--   (their `deadline` activity row, todos/sql/deadlines.sql) within the last
--   `lookback_seconds` and after the rule was made; the subject is that row.
-- params: kind, lookback_seconds
-- returns: rule_id, subject, endpoint_id, queue, todo_id, detail, forgotten (as
--   fire_dead_letter.sql's).
-- Uses index: todos_finished_idx (endpoint_id, finished_at DESC) WHERE finished_at IS NOT NULL;
--   todo_activity_pkey per todo found.
WITH rs AS (@{rule_endpoints})
SELECT rs.rule_id, t.id || '#' || a.seq AS subject, rs.endpoint_id, t.queue, t.id AS todo_id,
       jsonb_build_object('title', left(t.title, 200), 'reason', a.detail->>'reason',
                          'at', a.at) AS detail,
       t.forgotten_at IS NOT NULL AS forgotten
  FROM rs
  JOIN todos t
    ON t.endpoint_id = rs.endpoint_id
   AND t.finished_at >= greatest(rs.rule_created_at,
                                now() - make_interval(secs => %(lookback_seconds)s))
   AND t.state = 'failed'
   AND (rs.rule_queue IS NULL OR t.queue = rs.rule_queue)
  JOIN todo_activity a ON a.todo_id = t.id AND a.kind = 'deadline' AND a.at = t.finished_at
