-- _feed_activity: the feed's arm of activity rows, newest first, at most `size` of them; rings
--   are left out (the trail shows them). @{activity_filter} holds the fixed bounds and filters
--   the variant needs.
-- Uses index: idx_todo_activity_at, newest first (an Incremental Sort orders each instant's
--   ties); todos_pkey per row walked (_feed_owned.sql).
(SELECT v.at, v.kind, v.todo_id, v.seq, v.attempt_seq, v.actor_kind, v.actor_ref, v.message,
        v.truncated, v.detail, NULL::text AS outcome, NULL::text AS disposition
   FROM todo_activity v
  WHERE v.kind <> 'rung' @{activity_filter} AND @{feed_owned_activity}
  ORDER BY v.at DESC, v.kind, v.todo_id, v.seq
  LIMIT %(size)s)
