-- soak_events: the todos each stored delivery routed to, by event id, for deliveries the soak
--   saw answered as duplicates (the original's todos account for them).
-- params: ids (bigint[]: event ids)
-- returns: event_id, id (a todo's).
-- Uses index: todos_event_idx (event_id) WHERE event_id IS NOT NULL.
SELECT t.event_id, t.id FROM todos t WHERE t.event_id = ANY(%(ids)s)
