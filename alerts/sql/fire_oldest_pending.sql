-- fire_oldest_pending: per rule, the queues whose oldest claimable pending todo has waited
--   longer than the rule's for_seconds (waiting since it was created, or since its not_before
--   when that is later: a delayed todo is not late before it may run), outside paused queues.
-- params: kind
-- returns: rule_id, subject, endpoint_id, queue, todo_id (the oldest), detail.
-- Uses index: todos_board_state_idx (endpoint_id, state, …): O(pending todos of the endpoints);
--   queue_pauses_open_idx per queue.
WITH rs AS (@{rule_endpoints})
SELECT rs.rule_id, rs.endpoint_id::text || '/' || o.queue AS subject, rs.endpoint_id, o.queue,
       o.todo_id,
       jsonb_build_object('waiting_since', o.since, 'for_seconds', rs.for_seconds) AS detail
  FROM rs
 CROSS JOIN LATERAL (
        SELECT DISTINCT ON (t.queue) t.queue, t.id AS todo_id,
               greatest(t.created_at, coalesce(t.not_before, t.created_at)) AS since
          FROM todos t
         WHERE t.endpoint_id = rs.endpoint_id AND t.state = 'pending'
           AND (rs.rule_queue IS NULL OR t.queue = rs.rule_queue)
           AND greatest(t.created_at, coalesce(t.not_before, t.created_at))
               <= now() - make_interval(secs => rs.for_seconds)
           -- A paused queue's todos are not claimable: its pause (an operator's, or a budget's,
           -- whose own alert said so) is why they wait.
           AND NOT EXISTS (SELECT 1 FROM queue_pauses qp
                            WHERE qp.endpoint_id = t.endpoint_id AND qp.queue = t.queue
                              AND qp.resumed_at IS NULL)
         ORDER BY t.queue, greatest(t.created_at, coalesce(t.not_before, t.created_at)), t.id) o
