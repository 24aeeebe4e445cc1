-- fire_depth: per rule, the queues (its own, or every queue of the endpoints it covers) with
--   more than `threshold` todos pending now. The alert opens once that has held for the
--   rule's for_seconds (open_alerts.sql keeps it pending until then).
-- params: kind
-- returns: rule_id, subject, endpoint_id, queue, todo_id (NULL), detail.
-- Uses index: todos_board_state_idx (endpoint_id, state, …): O(pending todos of the endpoints).
WITH rs AS (@{rule_endpoints})
SELECT rs.rule_id, rs.endpoint_id::text || '/' || d.queue AS subject, rs.endpoint_id, d.queue,
       NULL::text AS todo_id,
       jsonb_build_object('depth', d.depth, 'threshold', rs.threshold,
                          'for_seconds', rs.for_seconds) AS detail
  FROM rs
 CROSS JOIN LATERAL (
        SELECT t.queue, count(*) AS depth
          FROM todos t
         WHERE t.endpoint_id = rs.endpoint_id AND t.state = 'pending'
           AND (rs.rule_queue IS NULL OR t.queue = rs.rule_queue)
         GROUP BY t.queue) d
 WHERE d.depth > rs.threshold
