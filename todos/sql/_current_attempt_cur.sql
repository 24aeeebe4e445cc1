-- current_attempt_cur: _current_attempt.sql on the open attempt a statement read into its `cur`
-- CTE (heartbeat.sql), instead of a probe of its own.
EXISTS (SELECT 1 FROM cur WHERE cur.seq = t.attempts_total)
