-- intake_original: the accepted event that holds a delivery id, or a signed body, on a source.
-- params: source_id, delivery_id, body_sha256 (either may be NULL)
-- returns: at most one row: id.
-- Uses index: events_source_delivery_uniq, events_source_signed_body_uniq.
SELECT ev.id
  FROM events ev
 WHERE ev.source_id = %(source_id)s
   AND (ev.delivery_id = %(delivery_id)s OR ev.body_sha256 = %(body_sha256)s)
   AND ev.disposition IN ('routed', 'dropped')
 LIMIT 1
