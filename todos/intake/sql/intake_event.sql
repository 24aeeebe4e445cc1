-- intake_event: store a delivery's event; an accepted delivery id, and an accepted body signed
--   without a timestamp (body_sha256, set only then), each claim their place once per source.
-- params: source_id, delivery_id (NULL when the sender gave none), body_sha256 (NULL unless the
--   body was verified by a signature that covers no timestamp), headers (jsonb), payload (jsonb),
--   verification (jsonb), disposition ('routed' or 'dropped'), routing_trace (jsonb)
-- returns: the new event's id; no row when an earlier accepted delivery holds this delivery id
--   or this signed body (a concurrent holder is waited for: its commit means "duplicate", its
--   rollback means "insert").
-- Uses index: events_source_delivery_uniq, events_source_signed_body_uniq (the arbiters of
--   ON CONFLICT: any unique index the row would violate).
INSERT INTO events (source_id, delivery_id, body_sha256, headers, payload, verification,
                    disposition, routing_trace)
VALUES (%(source_id)s, %(delivery_id)s, %(body_sha256)s, %(headers)s, %(payload)s,
        %(verification)s, %(disposition)s, %(routing_trace)s)
ON CONFLICT DO NOTHING
RETURNING id
