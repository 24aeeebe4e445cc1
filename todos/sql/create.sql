-- create: a new pending todo on a live endpoint's queue; rings the doorbell.
-- params: id, endpoint_id, queue, title, event_id, payload (jsonb), work_order, routing_trace
--   (jsonb), assignee, max_attempts
-- returns: the todo; no row when the endpoint is unknown or revoked.
-- Uses index: endpoints_pkey.
WITH upd AS (
    INSERT INTO todos (id, endpoint_id, queue, title, event_id, payload, work_order,
                       routing_trace, assignee, max_attempts)
    SELECT %(id)s, e.id, %(queue)s, %(title)s, %(event_id)s, %(payload)s, %(work_order)s,
           %(routing_trace)s, %(assignee)s, %(max_attempts)s
      FROM endpoints e
     WHERE e.id = %(endpoint_id)s AND e.revoked_at IS NULL
    RETURNING *
)
SELECT upd.*, NULL::int AS attempt_seq, @{notify_ready} AS rung FROM upd
