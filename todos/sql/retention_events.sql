-- retention_events: delete up to `batch` events older than `days` that no todo references.
-- params: days, batch
-- returns: id per deleted event.
-- Uses index: events_received_idx (received_at); todos_event_idx for the NOT EXISTS probe.
WITH victims AS (
    SELECT e.id FROM events e
     WHERE e.received_at < now() - %(days)s * interval '1 day'
       AND NOT EXISTS (SELECT 1 FROM todos t WHERE t.event_id = e.id)
     ORDER BY e.received_at
     LIMIT %(batch)s
       FOR UPDATE SKIP LOCKED
)
DELETE FROM events e USING victims v WHERE e.id = v.id RETURNING e.id
