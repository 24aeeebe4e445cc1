-- deadlines: dead-letter the todos whose time ran out: any unfinished todo past its finish_by
--   (no retry after its deadline), and any still pending past its start_by that was never
--   claimed (nobody took it in time; start_by bounds the first claim only). An open attempt closes timed_out/dead_lettered, its summary the reason; a `deadline`
--   activity row of the sweeper says which deadline passed (detail.reason: 'finish_by' or
--   'start_by'), so the holder's next call learns who ended it (ended.sql). SKIP LOCKED, as
--   every sweep: a row a transition holds is left for the next pass, and an in-flight todo
--   whose open attempt this snapshot cannot see (_current_attempt.sql) too.
-- params: limit
-- returns: id, endpoint_id, reason, from_state per dead-lettered todo.
-- Uses index: todos_finish_by_idx (finish_by) WHERE finish_by IS NOT NULL AND finished_at IS
--   NULL; todos_start_by_idx (start_by) WHERE start_by IS NOT NULL AND state = 'pending'
--   AND attempts_total = 0;
--   todos_pkey to lock each.
WITH late AS (
    (SELECT f.id FROM todos f
      WHERE f.finish_by IS NOT NULL AND f.finished_at IS NULL AND f.finish_by <= now()
      ORDER BY f.finish_by
      LIMIT %(limit)s)
    UNION
    (SELECT s.id FROM todos s
      WHERE s.start_by IS NOT NULL AND s.state = 'pending' AND s.attempts_total = 0
        AND s.start_by <= now()
      ORDER BY s.start_by
      LIMIT %(limit)s)
),
due AS (
    SELECT t.id, t.state AS from_state,
           CASE WHEN t.finish_by <= now() THEN 'finish_by' ELSE 'start_by' END AS reason
      FROM late
      JOIN todos t ON t.id = late.id
     -- Re-checked on the row as it stands once locked (a transition may have moved it).
     WHERE ((t.finish_by <= now() AND t.finished_at IS NULL)
            OR (t.start_by <= now() AND t.state = 'pending' AND t.attempts_total = 0))
       AND (t.state NOT IN ('claimed', 'input-required', 'auth-required') OR @{current_attempt})
     LIMIT %(limit)s
       FOR UPDATE OF t SKIP LOCKED
),
upd AS (
    UPDATE todos t
       SET activity_seq = t.activity_seq + 1, state = 'failed', next_retry_at = NULL,
           finished_at = now(), @{unheld}, updated_at = now()
      FROM due
     WHERE t.id = due.id
    RETURNING t.*, due.from_state, due.reason
),
closed AS (
    UPDATE todo_attempts a
       SET ended_at = now(), outcome = 'timed_out', disposition = 'dead_lettered',
           summary = upd.reason
      FROM upd
     WHERE a.todo_id = upd.id AND a.seq = upd.attempts_total AND a.ended_at IS NULL
    RETURNING a.todo_id, a.seq
),
activity AS (
    -- The arm of _activity_arm.sql, written out: its message and detail differ per row.
    INSERT INTO todo_activity (todo_id, endpoint_id, seq, attempt_seq, kind, actor_kind,
                               actor_ref, message, truncated, detail)
    SELECT upd.id, upd.endpoint_id, upd.activity_seq, (SELECT c.seq FROM closed c WHERE c.todo_id = upd.id),
           'deadline', 'system', 'sweeper', upd.reason, false,
           jsonb_build_object('action', 'dead_letter', 'from', upd.from_state, 'to', upd.state,
                              'reason', upd.reason)
      FROM upd
)
SELECT upd.id, upd.endpoint_id, upd.reason, upd.from_state, @{notify_changed} AS notified,
       CASE WHEN upd.from_state IN ('claimed', 'input-required', 'auth-required') THEN @{slot_freed} END AS freed
  FROM upd
