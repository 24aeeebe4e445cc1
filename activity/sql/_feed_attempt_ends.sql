-- _feed_attempt_ends: the feed's arm of attempt endings: for each of the human's endpoints
--   (@{feed_endpoints}), its endings newest first, `size` of them and those tied with the last
--   (feed.sql says why that is enough). The attempt's seq is the entry's seq, its owner the
--   actor (its claimant the label its agent sent, if any), its summary the message.
--   @{attempt_filter} holds the fixed bounds and filters the variant needs.
-- Uses index: the human's endpoints as _feed_endpoints.sql reads them; then per endpoint
--   idx_todo_attempts_feed (endpoint_id, ended_at DESC) WHERE ended_at IS NOT NULL, from the
--   cursor in its own order (no sort) and stopped by the LIMIT: no other owner's ending is
--   read. With a queue filter, todos_pkey per ending walked (_feed_queue.sql).
(SELECT a.at, 'attempt_end'::text AS kind, a.todo_id, a.seq::bigint AS seq,
        a.seq AS attempt_seq, a.claimer_kind AS actor_kind, a.owner AS actor_ref,
        a.summary AS message, a.summary_truncated AS truncated, '{}'::jsonb AS detail,
        a.outcome, a.disposition, a.claimant, e.id AS endpoint_id, e.slug AS endpoint_slug
   FROM @{feed_endpoints}
  CROSS JOIN LATERAL (
        SELECT a.ended_at AS at, a.todo_id, a.seq, a.claimer_kind, a.owner, a.summary,
               a.summary_truncated, a.outcome, a.disposition, a.claimant
          FROM todo_attempts a
         WHERE a.endpoint_id = e.id AND a.ended_at IS NOT NULL @{attempt_filter}
         ORDER BY a.ended_at DESC
         FETCH FIRST (%(size)s) ROWS WITH TIES) a)
