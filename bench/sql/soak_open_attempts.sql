-- soak_open_attempts: todos holding more than one open attempt at once (bench/soak.py samples it
--   every second; the deferred exclusion constraint on todo_attempts should make it impossible).
-- params: none
-- returns: todo_id, open (how many attempts are open), one row per todo with two or more.
-- Uses index: none: a scan of todo_attempts, which the soak keeps to a few thousand rows.
SELECT a.todo_id, count(*) AS open
  FROM todo_attempts a
 WHERE a.ended_at IS NULL
 GROUP BY a.todo_id
HAVING count(*) > 1
