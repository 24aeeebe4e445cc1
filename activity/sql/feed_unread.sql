-- feed_unread: how many entries of the human's Activity feed are newer than a time, counted up
--   to a cap: the feed's own arms (feed.sql) bounded by `at > since`, LIMIT `size`.
-- params: scope_human_id, since, size (the cap).
-- returns: n, at most `size`.
-- Uses index: the human's endpoints read once per arm (_feed_endpoints.sql); then, per
--   endpoint, idx_todo_attempts_feed and idx_todo_activity_feed, walked from now back to
--   `since` and stopped after `size` rows (and their last instant's ties): no other owner's
--   row is read, and no todo.
SELECT count(*)::int AS n
  FROM (
        SELECT 1
          FROM (@{arms}) u
         LIMIT %(size)s
       ) f
