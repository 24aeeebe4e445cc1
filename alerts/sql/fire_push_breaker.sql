-- fire_push_breaker: per rule, the endpoints whose push circuit breaker (push_circuits,
--   todos/push.py) has tripped and not been closed by a delivery since: open_until is set
--   when it trips and cleared only by a delivered push, so the alert does not flap between a
--   lapsed open_until and the next failed try. A rule's queue does not narrow it.
-- params: kind
-- returns: rule_id, subject, endpoint_id, queue (NULL), todo_id (NULL), detail.
-- Uses index: push_circuits_pkey.
WITH rs AS (@{rule_endpoints})
SELECT DISTINCT ON (rs.rule_id, rs.endpoint_id)
       rs.rule_id, rs.endpoint_id::text AS subject, rs.endpoint_id, NULL::text AS queue,
       NULL::text AS todo_id,
       jsonb_build_object('failures', pc.failures, 'open_until', pc.open_until) AS detail
  FROM rs
  JOIN push_circuits pc ON pc.endpoint_id = rs.endpoint_id AND pc.open_until IS NOT NULL
