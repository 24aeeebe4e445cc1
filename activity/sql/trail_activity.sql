-- trail_activity: one todo's activity rows for its trail page, the newest `limit`, newest first,
--   with the name of the human behind each Board action.
-- params: todo_id, limit.
-- returns: the rows' columns and actor_name (the username when actor_ref is "human:<id>" of a
--   human who still exists, else NULL). No scope predicate: activity/trail.py runs it only for
--   a todo its owner-scoped read has already found.
-- Uses index: todo_activity_pkey (todo_id, seq) read backwards and stopped after `limit` rows;
--   humans_pkey per row returned.
SELECT v.seq, v.attempt_seq, v.at, v.kind, v.actor_kind, v.actor_ref, v.message, v.truncated,
       v.detail, h.username AS actor_name
  FROM todo_activity v
  LEFT JOIN LATERAL (@{human_named}) h ON v.actor_kind = 'human'
 WHERE v.todo_id = %(todo_id)s
 ORDER BY v.seq DESC
 LIMIT %(limit)s
