-- claim_empty: why each queue an agent's claim_next asked for gave it nothing. A second read,
--   run only after a claim took nothing (never on a claim's own path): whether the queue is
--   paused, its limits and where it stands against them, whether it holds claimable work for
--   this claimer, and the earliest time its scheduled work becomes claimable
--   (@{earliest_not_before}). todos.queries.why_empty turns the row into one reason.
-- params: endpoint_id, queues (text[]), owner
-- returns: one row per queue, in the order asked: queue, paused, pause_reason and pause_until
--   (the open pause's: a budget's reason and its end, NULL for an operator's), max_in_flight,
--   in_flight (with max_in_flight),
--   claims_per_minute, tokens_now, next_token_at (with a rate above 0 and no token now),
--   claimable, not_before.
-- Uses index: queue_pauses_open_idx; queue_settings_queue_key; todos_board_state_idx for the
--   held count; todos_claim_queue_idx for claimable work, one probe per queue;
--   todos_queue_not_before_idx for the earliest scheduled one, one probe per queue
--   (_earliest_not_before.sql).
SELECT q.queue,
       qp.id IS NOT NULL AS paused, qp.reason AS pause_reason, qp.until AS pause_until,
       qs.max_in_flight,
       CASE WHEN qs.max_in_flight IS NOT NULL THEN
           (SELECT count(*) FROM todos f
             WHERE f.endpoint_id = %(endpoint_id)s
               AND f.state IN ('claimed', 'input-required', 'auth-required')
               AND f.queue = q.queue
               AND NOT (f.state = 'claimed' AND f.lease_expires_at < now()))
       END AS in_flight,
       qs.claims_per_minute, b.tokens_now,
       CASE WHEN qs.claims_per_minute > 0 AND b.tokens_now < 1 THEN
           now() + (1 - b.tokens_now) * 60 / qs.claims_per_minute * interval '1 second'
       END AS next_token_at,
       EXISTS (SELECT 1 FROM todos t
                WHERE t.endpoint_id = %(endpoint_id)s AND t.queue = q.queue
                  AND (t.assignee IS NULL OR t.assignee = %(owner)s)
                  AND @{claimable}) AS claimable,
       @{earliest_not_before} AS not_before
  FROM unnest((SELECT %(queues)s::text[])) WITH ORDINALITY AS q(queue, n)
  LEFT JOIN queue_pauses qp ON qp.endpoint_id = %(endpoint_id)s AND qp.queue = q.queue
                            AND qp.resumed_at IS NULL
  LEFT JOIN queue_settings qs ON qs.endpoint_id = %(endpoint_id)s AND qs.queue = q.queue
  LEFT JOIN LATERAL (
      SELECT LEAST(qs.claims_per_minute,
                   qs.tokens + qs.claims_per_minute
                               * extract(epoch FROM now() - qs.refilled_at)::real / 60)
             AS tokens_now
  ) b ON true
 ORDER BY q.n
