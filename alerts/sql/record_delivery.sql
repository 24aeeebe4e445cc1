-- record_delivery: the outcome of one try of alert message `id` (delivered, queued again after
--   `backoff_seconds`, or failed for good) and its channel's circuit breaker, as
--   todos/sql/record_push.sql does for push rings: a delivery closes it, a failed try counts,
--   `breaker_failures` in a row open it for `breaker_seconds`. Finished messages past the
--   newest `keep` of the channel are trimmed.
-- params: id, delivered, retry, status_code, error, duration_ms, backoff_seconds,
--   breaker_failures, breaker_seconds, keep
-- returns: failures, open_until of the channel's breaker; no row when the message is gone.
-- Uses index: alert_deliveries_pkey; alert_circuits_pkey; alert_deliveries_channel_idx to trim.
WITH upd AS (
    UPDATE alert_deliveries d
       SET state = CASE WHEN %(delivered)s THEN 'delivered'
                        WHEN %(retry)s THEN 'queued' ELSE 'failed' END,
           status_code = %(status_code)s, error = %(error)s, duration_ms = %(duration_ms)s,
           next_try_at = CASE WHEN %(retry)s AND NOT %(delivered)s
                              THEN now() + make_interval(secs => %(backoff_seconds)s)
                              ELSE d.next_try_at END,
           finished_at = CASE WHEN %(delivered)s OR NOT %(retry)s THEN now() END
     WHERE d.id = %(id)s AND d.state = 'queued'
    RETURNING d.channel_id
),
circuit AS (
    INSERT INTO alert_circuits AS k (channel_id, failures, open_until)
    SELECT upd.channel_id,
           CASE WHEN %(delivered)s THEN 0 ELSE 1 END,
           CASE WHEN NOT %(delivered)s AND 1 >= %(breaker_failures)s
                THEN now() + make_interval(secs => %(breaker_seconds)s) END
      FROM upd
    ON CONFLICT (channel_id) DO UPDATE
       SET failures = CASE WHEN %(delivered)s THEN 0 ELSE k.failures + 1 END,
           open_until = CASE WHEN %(delivered)s THEN NULL
                             WHEN k.failures + 1 >= %(breaker_failures)s
                             THEN now() + make_interval(secs => %(breaker_seconds)s)
                             ELSE k.open_until END
    RETURNING k.failures, k.open_until
),
trimmed AS (
    DELETE FROM alert_deliveries d
     USING upd
     WHERE d.channel_id = upd.channel_id AND d.state <> 'queued'
       AND d.id <= (SELECT q.id FROM alert_deliveries q
                     WHERE q.channel_id = upd.channel_id
                     ORDER BY q.id DESC OFFSET %(keep)s LIMIT 1)
)
SELECT circuit.failures, circuit.open_until FROM circuit
