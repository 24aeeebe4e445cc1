-- trail_activity: one todo's activity rows for its trail page, the newest `limit`, newest first
--   (their actors are named by one read for the page, switchboard/sql/actor_names.sql).
-- params: todo_id, limit.
-- returns: the rows' columns. No scope predicate: activity/trail.py runs it only for a todo its
--   owner-scoped read has already found.
-- Uses index: todo_activity_pkey (todo_id, seq) read backwards and stopped after `limit` rows.
SELECT v.seq, v.attempt_seq, v.at, v.kind, v.actor_kind, v.actor_ref, v.message, v.truncated,
       v.detail
  FROM todo_activity v
 WHERE v.todo_id = %(todo_id)s
 ORDER BY v.seq DESC
 LIMIT %(limit)s
