-- lease_extended: SET items that extend the lease of the claimed todo t by ttl_seconds (NULL:
--   by the TTL its claim chose, t.lease_ttl_seconds, else ttl_default), and
--   move its record of the sampled attempt write (attempt_heartbeat_at) to now() exactly when
--   that write is due: more than a minute since the last one, and the open attempt visible to
--   this statement (docs/decisions/0006-heartbeat-sampling.md). heartbeat.sql says why.
-- Never past the todo's finish_by or its claim's run timeout (_lease_cap.sql): the holder
-- keeps heartbeating, the lease stops growing, and the sweeper ends it.
lease_expires_at = LEAST(
    now() + COALESCE(%(ttl_seconds)s::int, t.lease_ttl_seconds, %(ttl_default)s::int)
            * interval '1 second',
    @{lease_cap}),
updated_at = now(),
attempt_heartbeat_at =
    CASE WHEN (t.attempt_heartbeat_at IS NULL
               OR t.attempt_heartbeat_at < now() - interval '1 minute')
              AND @{current_attempt}
         THEN now() ELSE t.attempt_heartbeat_at END
