-- requeue_due_retries: failed todos whose retry is due go back to pending and ring the doorbell.
--   No attempt changes: no lease ends here. The requeue clears the todo's ring gate
--   (last_ringed_at, shared by every process: todos/sql/ring.sql), so this ring goes out even
--   inside the gate's minute, whichever process ran the sweep.
-- params: limit
-- returns: id, endpoint_id, state per requeued todo (endpoint and state for the live update).
-- Uses index: todos_retry_due_idx (next_retry_at) WHERE state = 'failed' AND next_retry_at IS NOT NULL.
WITH due AS (
    SELECT t.id
      FROM todos t
     WHERE t.state = 'failed' AND t.next_retry_at IS NOT NULL AND t.next_retry_at <= now()
     ORDER BY t.next_retry_at
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
),
upd AS (
    UPDATE todos t
       SET @{activity_bump}state = 'pending', next_retry_at = NULL, updated_at = now(),
           last_ringed_at = NULL
      FROM due
     WHERE t.id = due.id
    RETURNING t.id, t.endpoint_id, t.queue, t.state, t.activity_seq
)@{activity}
SELECT upd.id, upd.endpoint_id, upd.state,
       @{notify_ready} AS notified
  FROM upd
