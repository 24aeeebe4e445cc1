-- intake_original: the accepted event that holds a delivery id on a source.
-- params: source_id, delivery_id
-- returns: at most one row: id.
-- Uses index: events_source_delivery_uniq.
SELECT ev.id
  FROM events ev
 WHERE ev.source_id = %(source_id)s AND ev.delivery_id = %(delivery_id)s
   AND ev.disposition IN ('routed', 'dropped')
