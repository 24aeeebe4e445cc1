-- retry_backoff: when the retry of todo t falls due after a failure: after retry_after_seconds
--   when given, else min(retry_base * 2^(attempt-1), retry_max) ±10 % jitter. fail.sql and
--   reap.sql's run-timeout arm (a timed-out run retries as a failure does).
now() + COALESCE(
    %(retry_after_seconds)s::float8,
    LEAST(%(retry_base_seconds)s * power(2, LEAST(GREATEST(t.attempt - 1, 0), 40)),
          %(retry_max_seconds)s) * (0.9 + random() * 0.2)
) * interval '1 second'
