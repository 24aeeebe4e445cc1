-- retention_events_count: how many events retention_events would delete, for --dry-run.
-- params: days
-- returns: n
-- Uses index: events_received_idx; todos_event_idx.
SELECT count(*) AS n FROM events e
 WHERE e.received_at < now() - %(days)s * interval '1 day'
   AND NOT EXISTS (SELECT 1 FROM todos t WHERE t.event_id = e.id)
