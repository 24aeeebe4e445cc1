-- claim_pushes: take up to `limit` queued push rings whose next try is due, for the sweeper to
--   send after this commits (todos/push.py). Taking one counts a try and moves its next try
--   `lease_seconds` ahead, so a sender that dies mid-send leaves it to be taken again then, and
--   two senders never take the same row (SKIP LOCKED). An endpoint whose circuit breaker is open
--   gets nothing sent until it closes, test rings included.
-- params: limit, lease_seconds
-- returns: id, endpoint_id, todo_id, ring_id, queue, reason, tries, push_url, push_secret.
-- Uses index: push_attempts_due_idx (next_try_at) WHERE state = 'queued'; push_circuits_pkey.
WITH due AS (
    SELECT p.id
      FROM push_attempts p
     WHERE p.state = 'queued' AND p.next_try_at <= now()
       AND NOT EXISTS (SELECT 1 FROM push_circuits c
                        WHERE c.endpoint_id = p.endpoint_id AND c.open_until > now())
     ORDER BY p.next_try_at
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
),
upd AS (
    UPDATE push_attempts p
       SET tries = p.tries + 1, next_try_at = now() + make_interval(secs => %(lease_seconds)s)
      FROM due
     WHERE p.id = due.id
    RETURNING p.id, p.endpoint_id, p.todo_id, p.ring_id, p.queue, p.reason, p.tries
)
SELECT upd.id, upd.endpoint_id, upd.todo_id, upd.ring_id, upd.queue, upd.reason, upd.tries,
       e.push_url, e.push_secret
  FROM upd JOIN endpoints e ON e.id = upd.endpoint_id
 ORDER BY upd.endpoint_id, upd.id
