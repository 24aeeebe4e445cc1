-- requeue_due_retries: failed todos whose retry is due go back to pending and ring the doorbell.
--   No attempt changes: no lease ends here.
-- params: limit
-- returns: id per requeued todo.
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
       SET state = 'pending', next_retry_at = NULL, updated_at = now()
      FROM due
     WHERE t.id = due.id
    RETURNING t.id, t.endpoint_id, t.queue
)
SELECT upd.id, @{notify_ready} AS rung FROM upd
