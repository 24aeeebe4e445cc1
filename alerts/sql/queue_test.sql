-- queue_test: queue a test message to channel `channel_id` for the sweeper to send
--   (alerts/deliver.py), as todos/sql/queue_test_push.sql queues the push rings' test ring.
--   `guarded` (the Board's button, the admin's action): refused while the channel is disabled
--   or its circuit breaker is open, and when a test was queued for it in the last
--   `every_seconds` (a button, not a way to make the server post in a loop). Unguarded (manage.py
--   alert test, which sends it at once and prints the answer): queued whatever the breaker.
-- params: channel_id, every_seconds, guarded
-- returns: one row (disabled, breaker_open, throttled, id) when the channel exists, id NULL
--   unless queued; no row otherwise.
-- Uses index: alert_channels_pkey; alert_circuits_pkey; alert_deliveries_channel_idx
--   (channel_id, id DESC) for the channel's recent tests.
WITH target AS (
    SELECT c.id, NOT c.enabled AS disabled,
           EXISTS (SELECT 1 FROM alert_circuits k
                    WHERE k.channel_id = c.id AND k.open_until > now()) AS breaker_open,
           EXISTS (SELECT 1 FROM alert_deliveries d
                    WHERE d.channel_id = c.id AND d.message = 'test'
                      AND d.created_at > now() - make_interval(secs => %(every_seconds)s))
               AS throttled
      FROM alert_channels c
     WHERE c.id = %(channel_id)s
),
queued AS (
    INSERT INTO alert_deliveries (channel_id, message)
    SELECT t.id, 'test'
      FROM target t
     WHERE NOT %(guarded)s OR NOT (t.disabled OR t.breaker_open OR t.throttled)
    RETURNING id
)
SELECT t.disabled, t.breaker_open, t.throttled, (SELECT q.id FROM queued q) AS id
  FROM target t
