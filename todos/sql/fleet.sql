-- fleet: what the Board's endpoint pages say about each endpoint's agents, one row per endpoint.
-- params: ids (uuid[], the endpoints asked about), stale_seconds (a process's stream counts
--   older than this are a dead process's and do not count), and the scope's parameters.
-- returns: endpoint_id; last_seen_at (the newest last_used_at of its keys, revoked ones too:
--   every surface that authenticates with a key writes it, at most once a minute per key,
--   switchboard/auth.py); open_streams (subscription streams open now, summed over the server
--   processes' rows in mcp_streams_open, mcp_server/presence.py); claims (todos it holds now:
--   @{in_flight}); and, of the attempts its agents ended in the last hour and day, how many ended
--   and how many of those failed or died (failed, lease_expired, reaped); the spans its
--   exporters sent that were refused in the last hour and day, by reason (span_refusals, one
--   row per minute with refusals, otlp/store.py); what its model calls cost this UTC day
--   (cost_today) and the tokens of the day's calls no price covered (unpriced_today), from
--   usage_hours. Endpoints outside the scope give no row.
-- Uses index: endpoints_pkey; endpoint_keys' foreign-key index on endpoint_id (its few keys);
--   mcp_streams_open_pkey (endpoint_id, process_id); todos_board_state_idx (endpoint_id, state);
--   idx_todo_attempts_by_endpoint (claimer_endpoint_id, ended_at) INCLUDE (outcome): a day of
--   one endpoint's attempts, counted from the index (an index-only scan once vacuumed);
--   span_refusals_pkey (endpoint_id, minute): at most a day of minutes.
--   usage_hours_pkey (endpoint_id, …): the day's hours of its queues.
SELECT e.id AS endpoint_id,
       (SELECT max(k.last_used_at) FROM endpoint_keys k WHERE k.endpoint_id = e.id)
           AS last_seen_at,
       (SELECT coalesce(sum(s.streams), 0) FROM mcp_streams_open s
         WHERE s.endpoint_id = e.id
           AND s.seen_at > now() - %(stale_seconds)s * interval '1 second')::int
           AS open_streams,
       (SELECT count(*) FROM todos t WHERE t.endpoint_id = e.id AND @{in_flight})::int AS claims,
       f.ended_hour, f.failed_hour, f.ended_day, f.failed_day,
       r.unbound_hour, r.over_cap_hour, r.invalid_hour, r.unbound_day, r.over_cap_day,
       r.invalid_day, u.cost_today, u.unpriced_today
  FROM endpoints e
  CROSS JOIN LATERAL (
      SELECT count(*) FILTER (WHERE a.ended_at > now() - interval '1 hour')::int AS ended_hour,
             count(*) FILTER (WHERE a.ended_at > now() - interval '1 hour'
                                AND a.outcome IN ('failed', 'lease_expired', 'reaped'))::int
                 AS failed_hour,
             count(*)::int AS ended_day,
             count(*) FILTER (WHERE a.outcome IN ('failed', 'lease_expired', 'reaped'))::int
                 AS failed_day
        FROM todo_attempts a
       WHERE a.claimer_endpoint_id = e.id
         AND a.ended_at IS NOT NULL
         AND a.ended_at > now() - interval '1 day'
  ) f
  CROSS JOIN LATERAL (
      SELECT coalesce(sum(r.unbound) FILTER (WHERE r.minute > now() - interval '1 hour'), 0)::int
                 AS unbound_hour,
             coalesce(sum(r.over_cap) FILTER (WHERE r.minute > now() - interval '1 hour'), 0)::int
                 AS over_cap_hour,
             coalesce(sum(r.invalid) FILTER (WHERE r.minute > now() - interval '1 hour'), 0)::int
                 AS invalid_hour,
             coalesce(sum(r.unbound), 0)::int AS unbound_day,
             coalesce(sum(r.over_cap), 0)::int AS over_cap_day,
             coalesce(sum(r.invalid), 0)::int AS invalid_day
        FROM span_refusals r
       WHERE r.endpoint_id = e.id AND r.minute > now() - interval '1 day'
  ) r
  CROSS JOIN LATERAL (
      SELECT coalesce(sum(h.cost_usd), 0) AS cost_today,
             coalesce(sum(h.unpriced_tokens), 0)::bigint AS unpriced_today
        FROM usage_hours h
       WHERE h.endpoint_id = e.id
         AND h.hour >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
  ) u
 WHERE e.id = ANY(%(ids)s) AND @{scope}
