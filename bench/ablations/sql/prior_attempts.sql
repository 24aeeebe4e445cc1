-- prior_attempts: ablation "b-unfolded", the second round trip of an unfolded claim: the five
--   newest closed attempts of the todo just claimed, scoped through its endpoint.
-- params: id, endpoint_id
-- returns: one row, prior_attempts (jsonb, newest first).
-- Uses index: todos_pkey, todo_attempts_pkey (backwards).
SELECT COALESCE(jsonb_agg(to_jsonb(p) - 'lease_token_hash' ORDER BY p.seq DESC), '[]')
       AS prior_attempts
  FROM (SELECT a.*
          FROM todo_attempts a
          JOIN todos t ON t.id = a.todo_id AND t.endpoint_id = %(endpoint_id)s
         WHERE a.todo_id = %(id)s AND a.ended_at IS NOT NULL
         ORDER BY a.seq DESC
         LIMIT 5) p
