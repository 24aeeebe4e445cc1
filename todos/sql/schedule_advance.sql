-- schedule_advance: move a schedule past the tick it fires, only if that tick is still its next.
--   The fire step's exactly-once: of two sweepers that both read next_run_at = due, the second
--   re-checks the predicate against the first's committed row (READ COMMITTED) and updates
--   nothing, so it creates nothing. A pause or an edit in between also makes it match nothing.
-- params: id, due, next, fired (the tick fired, NULL when the missed ticks were skipped)
-- returns: id when the schedule moved on (this caller fires), no row otherwise.
-- Uses index: schedules_pkey.
UPDATE schedules
   SET next_run_at = %(next)s,
       last_run_at = COALESCE(%(fired)s, last_run_at)
 WHERE id = %(id)s AND enabled AND next_run_at = %(due)s
RETURNING id
