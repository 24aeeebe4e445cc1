-- _feed_activity: the feed's arm of activity rows, newest first: `size` of them and those tied
--   with the last (feed.sql says why that is enough); rings are left out (the trail shows
--   them). @{activity_filter} holds the fixed bounds and filters the variant needs.
-- Uses index: idx_todo_activity_at, in its own order (no sort); todos_pkey per row walked
--   (_feed_owned.sql).
(SELECT v.at, v.kind, v.todo_id, v.seq, v.attempt_seq, v.actor_kind, v.actor_ref, v.message,
        v.truncated, v.detail, NULL::text AS outcome, NULL::text AS disposition,
        NULL::text AS claimant
   FROM todo_activity v
  WHERE v.kind <> 'rung' @{activity_filter} AND @{feed_owned_activity}
  ORDER BY v.at DESC
  FETCH FIRST (%(size)s) ROWS WITH TIES)
