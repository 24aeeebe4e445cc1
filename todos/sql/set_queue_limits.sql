-- set_queue_limits: set an endpoint's queue's limits and default run timeout, each only when
--   asked to (set_*; a NULL value clears it), creating the queue's row on first use. A changed
--   rate starts with a full bucket. Wakes the claimers waiting on the queue, as a resume does
--   (one `rung` announcement for the queue): a raised or cleared limit may give them work.
-- params: endpoint_id, queue, set_max_in_flight, max_in_flight, set_claims_per_minute,
--   claims_per_minute, set_run_timeout_seconds, run_timeout_seconds, set_default_max_cost_usd,
--   default_max_cost_usd, set_daily_budget_usd, daily_budget_usd, actor_ref, and the owner's
--   scope_human_id when @{owner} checks it (a human's change: their own endpoints only)
-- returns: one row: found (the endpoint exists, in scope), changed, and the row's limits as
--   they stand (NULL when not found), notified (the announcement, sent after commit).
-- Uses index: endpoints_pkey; queue_settings_queue_key (the conflict target).
WITH ep AS (
    SELECT e.id FROM endpoints e WHERE e.id = %(endpoint_id)s AND @{owner}
),
old AS (
    SELECT qs.max_in_flight, qs.claims_per_minute, qs.run_timeout_seconds,
           qs.default_max_cost_usd, qs.daily_budget_usd
      FROM queue_settings qs, ep
     WHERE qs.endpoint_id = ep.id AND qs.queue = %(queue)s
),
up AS (
    INSERT INTO queue_settings AS qs (endpoint_id, queue, max_in_flight, claims_per_minute,
                                      tokens, refilled_at, run_timeout_seconds,
                                      default_max_cost_usd, daily_budget_usd, updated_by)
    SELECT ep.id, %(queue)s, %(max_in_flight)s, %(claims_per_minute)s,
           COALESCE(%(claims_per_minute)s, 0), now(), %(run_timeout_seconds)s,
           %(default_max_cost_usd)s::numeric, %(daily_budget_usd)s::numeric, %(actor_ref)s
      FROM ep
    ON CONFLICT (endpoint_id, queue) DO UPDATE
       SET max_in_flight = CASE WHEN %(set_max_in_flight)s THEN excluded.max_in_flight
                                ELSE qs.max_in_flight END,
           claims_per_minute = CASE WHEN %(set_claims_per_minute)s
                                    THEN excluded.claims_per_minute
                                    ELSE qs.claims_per_minute END,
           tokens = CASE WHEN %(set_claims_per_minute)s
                          AND excluded.claims_per_minute IS DISTINCT FROM qs.claims_per_minute
                         THEN excluded.tokens ELSE qs.tokens END,
           refilled_at = CASE WHEN %(set_claims_per_minute)s
                               AND excluded.claims_per_minute IS DISTINCT FROM qs.claims_per_minute
                              THEN now() ELSE qs.refilled_at END,
           run_timeout_seconds = CASE WHEN %(set_run_timeout_seconds)s
                                      THEN excluded.run_timeout_seconds
                                      ELSE qs.run_timeout_seconds END,
           default_max_cost_usd = CASE WHEN %(set_default_max_cost_usd)s
                                       THEN excluded.default_max_cost_usd
                                       ELSE qs.default_max_cost_usd END,
           daily_budget_usd = CASE WHEN %(set_daily_budget_usd)s
                                   THEN excluded.daily_budget_usd
                                   ELSE qs.daily_budget_usd END,
           updated_at = now(), updated_by = excluded.updated_by
    RETURNING qs.endpoint_id, qs.queue, qs.max_in_flight, qs.claims_per_minute,
              qs.run_timeout_seconds, qs.default_max_cost_usd, qs.daily_budget_usd
)
SELECT EXISTS (SELECT 1 FROM ep) AS found,
       (SELECT (o.max_in_flight, o.claims_per_minute, o.run_timeout_seconds,
                o.default_max_cost_usd, o.daily_budget_usd)
               IS DISTINCT FROM (up.max_in_flight, up.claims_per_minute, up.run_timeout_seconds,
                                 up.default_max_cost_usd, up.daily_budget_usd)
          FROM (SELECT 1) one LEFT JOIN old o ON true) AS changed,
       up.max_in_flight, up.claims_per_minute, up.run_timeout_seconds,
       up.default_max_cost_usd, up.daily_budget_usd,
       CASE WHEN up.endpoint_id IS NOT NULL
            THEN json_build_object('kind', 'rung', 'todo_id', '', 'endpoint_id', up.endpoint_id,
                                   'queue', up.queue, 'reason', 'limits')::text END AS notified
  FROM (SELECT 1) one LEFT JOIN up ON true
