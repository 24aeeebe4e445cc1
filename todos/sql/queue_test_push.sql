-- queue_test_push: queue a test push ring (reason 'test', no todo) for the endpoint, if it has a
--   push URL, is not revoked, its circuit breaker is closed, and no test ring was queued for it
--   in the last `every_seconds` (a button, not a way to make the server post in a loop); the
--   sweeper sends it like any other (todos/push.py).
-- params: endpoint_id, ring_id, every_seconds
-- returns: one row (breaker_open, throttled, id) when the endpoint has a push URL and is not
--   revoked, id NULL unless queued; no row otherwise.
-- Uses index: endpoints_pkey; push_circuits_pkey; push_attempts_endpoint_idx (endpoint_id, id DESC).
WITH target AS (
    SELECT e.id,
           EXISTS (SELECT 1 FROM push_circuits c
                    WHERE c.endpoint_id = e.id AND c.open_until > now()) AS breaker_open,
           EXISTS (SELECT 1 FROM push_attempts p
                    WHERE p.endpoint_id = e.id AND p.reason = 'test'
                      AND p.created_at > now() - make_interval(secs => %(every_seconds)s))
               AS throttled
      FROM endpoints e
     WHERE e.id = %(endpoint_id)s AND e.push_url IS NOT NULL AND e.revoked_at IS NULL
),
queued AS (
    INSERT INTO push_attempts (endpoint_id, todo_id, ring_id, queue, reason)
    SELECT t.id, NULL, %(ring_id)s, '', 'test'
      FROM target t
     WHERE NOT t.breaker_open AND NOT t.throttled
    RETURNING id
)
SELECT t.breaker_open, t.throttled, (SELECT q.id FROM queued q) AS id
  FROM target t
