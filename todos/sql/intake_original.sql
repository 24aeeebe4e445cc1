-- intake_original: the accepted event that holds a delivery id on a source, and its todos.
-- params: source_id, delivery_id
-- returns: at most one row: id, todo_ids (the todos still referencing it, oldest first).
-- Uses index: events_source_delivery_uniq; todos_event_idx for the todos.
SELECT ev.id,
       COALESCE((SELECT array_agg(t.id ORDER BY t.created_at, t.id)
                   FROM todos t WHERE t.event_id = ev.id), '{}') AS todo_ids
  FROM events ev
 WHERE ev.source_id = %(source_id)s AND ev.delivery_id = %(delivery_id)s
   AND ev.disposition IN ('routed', 'dropped')
