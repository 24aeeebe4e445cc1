-- _feed_attempt_ends: the feed's arm of attempt endings, newest first: `size` of them and those
--   tied with the last (feed.sql says why that is enough). The attempt's seq is the entry's seq,
--   its owner the actor (its claimant the label its agent sent, if any), its summary the message. @{attempt_filter} holds the fixed bounds and
--   filters the variant needs.
-- Uses index: idx_todo_attempts_ended, in its own order (no sort); todos_pkey per row walked
--   (_feed_owned.sql).
(SELECT a.ended_at AS at, 'attempt_end'::text AS kind, a.todo_id, a.seq::bigint AS seq,
        a.seq AS attempt_seq, a.claimer_kind AS actor_kind, a.owner AS actor_ref,
        a.summary AS message, a.summary_truncated AS truncated, '{}'::jsonb AS detail,
        a.outcome, a.disposition, a.claimant
   FROM todo_attempts a
  WHERE a.ended_at IS NOT NULL @{attempt_filter} AND @{feed_owned_attempt}
  ORDER BY a.ended_at DESC
  FETCH FIRST (%(size)s) ROWS WITH TIES)
