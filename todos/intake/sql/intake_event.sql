-- intake_event: store a delivery's event; an accepted delivery id claims its place once per source.
-- params: source_id, delivery_id (NULL when the sender gave none), headers (jsonb),
--   payload (jsonb), verification (jsonb), disposition ('routed' or 'dropped'), routing_trace (jsonb)
-- returns: the new event's id; no row when an earlier accepted delivery holds this delivery id
--   (a concurrent holder is waited for: its commit means "duplicate", its rollback means "insert").
-- Uses index: events_source_delivery_uniq (the arbiter of ON CONFLICT).
INSERT INTO events (source_id, delivery_id, headers, payload, verification, disposition,
                    routing_trace)
VALUES (%(source_id)s, %(delivery_id)s, %(headers)s, %(payload)s, %(verification)s,
        %(disposition)s, %(routing_trace)s)
ON CONFLICT (source_id, delivery_id)
    WHERE delivery_id IS NOT NULL AND disposition IN ('routed', 'dropped')
    DO NOTHING
RETURNING id
