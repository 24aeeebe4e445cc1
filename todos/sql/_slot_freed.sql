-- slot_freed: a statement that ended the hold of row upd announces, when that hold was one of
-- its queue's max_in_flight slots (upd.holds_limited_slot, set by the claim that took it from a
-- limited queue), one queue-wide `rung` (no todo, reason 'freed'): the agents waiting on the
-- full queue claim again, as they do when its limit is raised (set_queue_limits.sql). NULL and
-- nothing announced otherwise, so a queue without that limit pays nothing. Returned in the
-- statement's `freed` column and announced after commit as `notified` is
-- (switchboard/lib/sql.py, docs/decisions/0033-announce-after-commit.md).
-- docs/decisions/0028-queue-limits.md.
CASE WHEN upd.holds_limited_slot
     THEN json_build_object('kind', 'rung', 'todo_id', '', 'endpoint_id', upd.endpoint_id,
                            'queue', upd.queue, 'reason', 'freed')::text END
