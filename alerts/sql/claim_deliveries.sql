-- claim_deliveries: take up to `limit` queued alert messages whose next try is due, for the
--   sweeper to send after this commits (alerts/deliver.py), as claim_pushes.sql takes push
--   rings: a try is counted and the next moved `lease_seconds` ahead (a sender that dies
--   mid-send leaves it to be taken again then), SKIP LOCKED so two senders never take one.
--   A channel whose circuit breaker is open gets nothing, tests included, until it closes
--   (as claim_pushes.sql holds an endpoint's test rings), and a disabled channel nothing at all.
--   `only`, when not NULL, takes that message alone, due or not, whatever the breaker
--   (manage.py alert test: a person at the shell asked for the answer).
-- params: limit, lease_seconds, only
-- returns: the message, its channel's target and secret, its alert and the endpoint's slug.
-- Uses index: alert_deliveries_due_idx (next_try_at) WHERE state = 'queued';
--   alert_circuits_pkey; alert_channels_pkey.
WITH due AS (
    SELECT d.id
      FROM alert_deliveries d
     WHERE d.state = 'queued'
       AND (d.id = %(only)s
            OR (%(only)s::bigint IS NULL AND d.next_try_at <= now()
                AND NOT EXISTS (SELECT 1 FROM alert_circuits k
                                 WHERE k.channel_id = d.channel_id AND k.open_until > now())
                AND EXISTS (SELECT 1 FROM alert_channels c
                             WHERE c.id = d.channel_id AND c.enabled)))
     ORDER BY d.next_try_at
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
),
upd AS (
    UPDATE alert_deliveries d
       SET tries = d.tries + 1, next_try_at = now() + make_interval(secs => %(lease_seconds)s)
      FROM due
     WHERE d.id = due.id
    RETURNING d.id, d.channel_id, d.alert_id, d.message, d.message_id, d.tries
)
SELECT upd.id, upd.channel_id, upd.message, upd.message_id, upd.tries,
       c.kind AS channel_kind, c.name AS channel_name, c.url, c.email, c.secret,
       a.id AS alert_id, a.kind, a.subject, a.state, a.summary, a.detail, a.queue, a.todo_id,
       a.since, a.opened_at, a.resolved_at, a.endpoint_id, e.slug AS endpoint
  FROM upd
  JOIN alert_channels c ON c.id = upd.channel_id
  LEFT JOIN alerts a ON a.id = upd.alert_id
  LEFT JOIN endpoints e ON e.id = a.endpoint_id
 ORDER BY upd.channel_id, upd.id
