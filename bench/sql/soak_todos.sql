-- soak_todos: every todo with its state, the delivery it came from and its first ring and claim,
--   for bench/soak.py's end-of-run checks (every todo accounted for; first rings).
-- params: none
-- returns: id, state, dead_letter (failed for good), n (the soak's delivery number from the
--   payload), event_id, created_at, first_rung, first_claimed (epoch seconds; NULL when none),
--   queue.
-- Uses index: todo_activity_pkey (todo_id, seq) and todo_attempts' primary key, per todo.
SELECT t.id, t.state, @{dead_letter} AS dead_letter,
       (t.payload ->> 'n')::bigint AS n, t.event_id,
       extract(epoch FROM t.created_at)::float8 AS created_at,
       (SELECT extract(epoch FROM min(r.at))::float8 FROM todo_activity r
         WHERE r.todo_id = t.id AND r.kind = 'rung') AS first_rung,
       (SELECT extract(epoch FROM min(a.claimed_at))::float8 FROM todo_attempts a
         WHERE a.todo_id = t.id) AS first_claimed,
       t.queue
  FROM todos t
