-- reap: claimed todos whose lease lapsed go back to pending, or are dead-lettered when their
--   budget is spent; each open attempt closes reaped/requeued or reaped/dead_lettered. Requeued
--   todos ring the doorbell. Safe beside a takeover and beside another reaper: rows are locked
--   SKIP LOCKED, and whoever locks a row first changes it, so the other's predicate no longer
--   matches and exactly one closes the attempt.
-- params: limit
-- returns: id, endpoint_id, state ('pending' or 'failed') per reaped todo.
-- Uses index: todos_inflight_idx (claimed_at) WHERE state = 'claimed'.
WITH due AS (
    SELECT t.id
      FROM todos t
     WHERE t.state = 'claimed' AND t.lease_expires_at < now() AND @{current_attempt}
     ORDER BY t.claimed_at
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
),
upd AS (
    UPDATE todos t
       SET state = CASE WHEN t.attempt >= t.max_attempts THEN 'failed' ELSE 'pending' END,
           finished_at = CASE WHEN t.attempt >= t.max_attempts THEN now() END,
           @{unheld}, updated_at = now()
      FROM due
     WHERE t.id = due.id
    RETURNING t.id, t.endpoint_id, t.queue, t.state, t.attempts_total
),
closed AS (
    UPDATE todo_attempts a
       SET ended_at = now(), outcome = 'reaped',
           disposition = CASE WHEN upd.state = 'failed' THEN 'dead_lettered' ELSE 'requeued' END
      FROM upd
     WHERE a.todo_id = upd.id AND a.seq = upd.attempts_total AND a.ended_at IS NULL
)
SELECT upd.id, upd.endpoint_id, upd.state,
       CASE WHEN upd.state = 'pending' THEN @{notify_ready} ELSE @{notify_changed} END AS notified
  FROM upd
