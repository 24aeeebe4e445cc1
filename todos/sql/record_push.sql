-- record_push: the outcome of one try of push ring `id`: delivered, queued again after
--   `backoff_seconds` (`retry`), or failed for good; and the endpoint's circuit breaker: a
--   delivery closes it, a failed try counts, and `breaker_failures` in a row open it for
--   `breaker_seconds`. Finished rows past the newest `keep` of the endpoint are trimmed.
-- params: id, delivered, retry, status_code, error, duration_ms, backoff_seconds,
--   breaker_failures, breaker_seconds, keep
-- returns: failures, open_until of the endpoint's breaker; no row when the push is gone.
-- Uses index: push_attempts_pkey; push_circuits_pkey; push_attempts_endpoint_idx to trim.
WITH upd AS (
    UPDATE push_attempts p
       SET state = CASE WHEN %(delivered)s THEN 'delivered'
                        WHEN %(retry)s THEN 'queued' ELSE 'failed' END,
           status_code = %(status_code)s, error = %(error)s, duration_ms = %(duration_ms)s,
           next_try_at = CASE WHEN %(retry)s AND NOT %(delivered)s
                              THEN now() + make_interval(secs => %(backoff_seconds)s)
                              ELSE p.next_try_at END,
           finished_at = CASE WHEN %(delivered)s OR NOT %(retry)s THEN now() END
     WHERE p.id = %(id)s AND p.state = 'queued'
    RETURNING p.endpoint_id
),
circuit AS (
    INSERT INTO push_circuits AS c (endpoint_id, failures, open_until)
    SELECT upd.endpoint_id,
           CASE WHEN %(delivered)s THEN 0 ELSE 1 END,
           CASE WHEN NOT %(delivered)s AND 1 >= %(breaker_failures)s
                THEN now() + make_interval(secs => %(breaker_seconds)s) END
      FROM upd
    ON CONFLICT (endpoint_id) DO UPDATE
       SET failures = CASE WHEN %(delivered)s THEN 0 ELSE c.failures + 1 END,
           open_until = CASE WHEN %(delivered)s THEN NULL
                             WHEN c.failures + 1 >= %(breaker_failures)s
                             THEN now() + make_interval(secs => %(breaker_seconds)s)
                             ELSE c.open_until END
    RETURNING c.failures, c.open_until
),
trimmed AS (
    DELETE FROM push_attempts p
     USING upd
     WHERE p.endpoint_id = upd.endpoint_id AND p.state <> 'queued'
       AND p.id <= (SELECT q.id FROM push_attempts q
                     WHERE q.endpoint_id = upd.endpoint_id
                     ORDER BY q.id DESC OFFSET %(keep)s LIMIT 1)
)
SELECT circuit.failures, circuit.open_until FROM circuit
