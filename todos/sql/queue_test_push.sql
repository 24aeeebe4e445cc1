-- queue_test_push: queue a test push ring (reason 'test', no todo) for the endpoint, if it has a
--   push URL and is not revoked; the sweeper sends it like any other (todos/push.py).
-- params: endpoint_id, ring_id
-- returns: id of the queued push; no row when the endpoint has no push URL or is revoked.
-- Uses index: endpoints_pkey.
INSERT INTO push_attempts (endpoint_id, todo_id, ring_id, queue, reason)
SELECT e.id, NULL, %(ring_id)s, '', 'test'
  FROM endpoints e
 WHERE e.id = %(endpoint_id)s AND e.push_url IS NOT NULL AND e.revoked_at IS NULL
RETURNING id
