-- feed_unread: how many entries of the human's Activity feed are newer than a time, counted up
--   to a cap: the feed's own arms (feed.sql) bounded by `at > since`, LIMIT `size`.
-- params: scope_human_id, since, size (the cap).
-- returns: n, at most `size`.
-- Uses index: idx_todo_attempts_ended and idx_todo_activity_at, walked from now back to
--   `since` and stopped after `size` of the human's rows (and their last instant's ties);
--   todos_pkey per row walked.
SELECT count(*)::int AS n
  FROM (
        SELECT 1
          FROM (@{arms}) u
         LIMIT %(size)s
       ) f
