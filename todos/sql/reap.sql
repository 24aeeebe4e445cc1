-- reap: claimed todos whose lease lapsed go back to pending, or are dead-lettered when their
--   budget is spent; each open attempt closes reaped/requeued or reaped/dead_lettered. A lease
--   that lapsed because its run timeout passed (the lease cap, _lease_cap.sql) is a timed-out
--   run instead, retried as a failure is: its attempt closes timed_out (summary 'run_timeout')
--   and the todo fails with a retry after the backoff (_retry_backoff.sql), or dead-letters when
--   its budget is spent or the retry would fall due after its finish_by (_retry_in_time.sql). A todo past its finish_by is left to deadlines.sql, which the sweeper
--   runs first. Requeued todos ring the doorbell. Safe beside a takeover and beside another
--   reaper: rows are locked SKIP LOCKED, and whoever locks a row first changes it, so the
--   other's predicate no longer matches and exactly one closes the attempt.
-- params: limit, retry_base_seconds, retry_max_seconds, retry_after_seconds (NULL)
-- returns: id, endpoint_id, state ('pending' or 'failed'), next_retry_at, timed_out per reaped
--   todo.
-- Uses index: todos_inflight_idx (claimed_at) WHERE state = 'claimed'.
WITH due AS (
    SELECT t.id,
           COALESCE(t.claimed_at + @{run_timeout} * interval '1 second' <= now(), false)
               AS timed_out
      FROM todos t
     WHERE t.state = 'claimed' AND t.lease_expires_at < now() AND @{current_attempt}
       AND (t.finish_by IS NULL OR t.finish_by > now())
     ORDER BY t.claimed_at
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
),
upd AS (
    UPDATE todos t
       SET state = CASE WHEN due.timed_out OR t.attempt >= t.max_attempts THEN 'failed'
                        ELSE 'pending' END,
           next_retry_at = CASE WHEN due.timed_out AND t.attempt < t.max_attempts
                                     AND @{retry_in_time}
                                THEN @{retry_backoff} END,
           finished_at = CASE WHEN t.attempt >= t.max_attempts
                                   OR (due.timed_out AND NOT @{retry_in_time})
                              THEN now() END,
           @{unheld}, updated_at = now()
      FROM due
     WHERE t.id = due.id
    RETURNING t.id, t.endpoint_id, t.queue, t.state, t.attempts_total, t.next_retry_at,
              t.holds_limited_slot, due.timed_out
),
closed AS (
    UPDATE todo_attempts a
       SET ended_at = now(),
           outcome = CASE WHEN upd.timed_out THEN 'timed_out' ELSE 'reaped' END,
           disposition = CASE WHEN upd.state = 'pending' THEN 'requeued'
                              WHEN upd.next_retry_at IS NOT NULL THEN 'retry_scheduled'
                              ELSE 'dead_lettered' END,
           summary = CASE WHEN upd.timed_out THEN 'run_timeout' END
      FROM upd
     WHERE a.todo_id = upd.id AND a.seq = upd.attempts_total AND a.ended_at IS NULL
)
SELECT upd.id, upd.endpoint_id, upd.state, upd.next_retry_at, upd.timed_out,
       CASE WHEN upd.state = 'pending' THEN @{notify_ready} ELSE @{notify_changed} END AS notified,
       @{slot_freed} AS freed
  FROM upd
