-- soak_attempts: every attempt as it stands, for bench/soak.py's "closed exactly once" check: a
--   closed attempt's end (time, outcome, disposition) must never change between two samples.
-- params: none
-- returns: todo_id, seq, ended_at (epoch seconds, NULL while open), outcome, disposition.
-- Uses index: none: a scan of todo_attempts, which the soak keeps to a few thousand rows.
SELECT a.todo_id, a.seq, extract(epoch FROM a.ended_at)::float8 AS ended_at, a.outcome,
       a.disposition
  FROM todo_attempts a
