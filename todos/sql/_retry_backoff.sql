-- retry_backoff: when the retry of todo t falls due after a failure: after retry_after_seconds
--   when given, else min(retry_base * 2^(attempt-1), retry_max) ±10 % jitter. fail.sql and
--   reap.sql's run-timeout arm (a timed-out run retries as a failure does). The jitter is the
--   todo's and attempt's own (a hash of both), not random(): spread across todos as random's
--   would be, but the same each time a statement writes it, so one statement can ask whether
--   the retry falls before finish_by and then set it (_retry_in_time.sql).
now() + COALESCE(
    %(retry_after_seconds)s::float8,
    LEAST(%(retry_base_seconds)s * power(2, LEAST(GREATEST(t.attempt - 1, 0), 40)),
          %(retry_max_seconds)s)
      * (0.9 + 0.2 * ((hashtext(t.id || ':' || t.attempt) & 1048575)::float8 / 1048575))
) * interval '1 second'
