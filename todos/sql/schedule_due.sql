-- schedule_due: lock the enabled schedule whose next run is the most overdue, if any is due.
--   SKIP LOCKED: a schedule another sweeper is firing is left to it, never waited on; once that
--   one commits, the row's next_run_at is in the future and this scan no longer matches it.
-- params: now (the clock to fire by: NULL for the database's now())
-- returns: the schedule's columns, and now (the clock used).
-- Uses index: schedules_due_idx (next_run_at) WHERE enabled.
SELECT s.id, s.endpoint_id, s.queue, s.title_template, s.payload_template,
       s.work_order_template, s.priority, s.start_within_seconds, s.finish_within_seconds,
       s.run_timeout_seconds, s.max_attempts, s.cron, s.timezone, s.next_run_at, s.missed,
       COALESCE(%(now)s::timestamptz, now()) AS now
  FROM schedules s
 WHERE s.enabled AND s.next_run_at <= COALESCE(%(now)s::timestamptz, now())
 ORDER BY s.next_run_at
 LIMIT 1
   FOR UPDATE SKIP LOCKED
