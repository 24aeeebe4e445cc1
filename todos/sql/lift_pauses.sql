-- lift_pauses: close the pauses whose `until` passed (a budget's, at the next UTC midnight),
--   by the sweeper, and wake each queue's waiting claimers as a resume does.
-- params: none
-- returns: endpoint_id, queue, notified (the queue-wide ring, announced after commit) per pause
--   lifted.
-- Uses index: queue_pauses_open_idx (open pauses are few).
WITH upd AS (
    UPDATE queue_pauses qp
       SET resumed_at = now(), resumed_by_kind = 'system', resumed_by = 'sweeper'
     WHERE qp.resumed_at IS NULL AND qp.until IS NOT NULL AND qp.until <= now()
    RETURNING qp.endpoint_id, qp.queue
)
SELECT upd.endpoint_id, upd.queue,
       json_build_object('kind', 'rung', 'todo_id', '', 'endpoint_id', upd.endpoint_id,
                         'queue', upd.queue, 'reason', 'resumed')::text AS notified
  FROM upd
