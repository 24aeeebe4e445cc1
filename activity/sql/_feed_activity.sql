-- _feed_activity: the feed's arm of activity rows (rings left out: the trail shows them): for
--   each of the human's endpoints (@{feed_endpoints}), its rows newest first, `size` of them
--   and those tied with the last (feed.sql says why that is enough). @{activity_filter} holds
--   the fixed bounds and filters the variant needs.
-- Uses index: the human's endpoints as _feed_endpoints.sql reads them; then per endpoint
--   idx_todo_activity_feed (endpoint_id, at DESC) WHERE kind <> 'rung', from the cursor in its
--   own order (no sort) and stopped by the LIMIT: no other owner's row is read. With a queue
--   filter, todos_pkey per row walked (_feed_queue.sql).
(SELECT v.at, v.kind, v.todo_id, v.seq, v.attempt_seq, v.actor_kind, v.actor_ref, v.message,
        v.truncated, v.detail, NULL::text AS outcome, NULL::text AS disposition,
        NULL::text AS claimant, e.id AS endpoint_id, e.slug AS endpoint_slug
   FROM @{feed_endpoints}
  CROSS JOIN LATERAL (
        SELECT v.at, v.kind, v.todo_id, v.seq, v.attempt_seq, v.actor_kind, v.actor_ref,
               v.message, v.truncated, v.detail
          FROM todo_activity v
         WHERE v.endpoint_id = e.id AND v.kind <> 'rung' @{activity_filter}
         ORDER BY v.at DESC
         FETCH FIRST (%(size)s) ROWS WITH TIES) v)
