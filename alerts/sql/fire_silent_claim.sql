-- fire_silent_claim: per rule, the claims held with no heartbeat (nor the claim itself) for
--   longer than the rule's for_seconds. The subject is the todo's attempt: the same todo
--   claimed again is a new claim. Heartbeats write attempt_heartbeat_at sampled
--   (docs/decisions/0006-heartbeat-sampling.md), so for_seconds should exceed that sampling.
-- params: kind
-- returns: rule_id, subject, endpoint_id, queue, todo_id, detail.
-- Uses index: todos_board_state_idx (endpoint_id, state, …): O(claims of the endpoints).
WITH rs AS (@{rule_endpoints})
SELECT rs.rule_id, t.id || '#' || t.attempts_total AS subject, rs.endpoint_id, t.queue,
       t.id AS todo_id,
       jsonb_build_object('title', left(t.title, 200), 'holder', t.owner,
                          'heard_at', coalesce(t.attempt_heartbeat_at, t.claimed_at),
                          'for_seconds', rs.for_seconds) AS detail
  FROM rs
  JOIN todos t
    ON t.endpoint_id = rs.endpoint_id AND t.state = 'claimed'
   AND (rs.rule_queue IS NULL OR t.queue = rs.rule_queue)
   AND coalesce(t.attempt_heartbeat_at, t.claimed_at)
       <= now() - make_interval(secs => rs.for_seconds)
