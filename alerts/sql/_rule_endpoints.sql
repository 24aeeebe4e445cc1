-- _rule_endpoints: the enabled rules of kind `kind` on enabled channels, a row per endpoint each
--   covers: the rule's own endpoint, or (endpoint NULL) every live endpoint its channel's owner
--   sees (a human's own and its teams', a team's own), now and later. The owner predicate is
--   switchboard/scope.py's (OWNER_ENDPOINTS_SQL, spliced as @{owner_endpoints}), checked on the
--   rule's own endpoint too, so a rule never hears about an endpoint its owner no longer sees.
-- params: kind
SELECT r.id AS rule_id, r.channel_id, r.queue AS rule_queue, r.threshold, r.for_seconds,
       r.created_at AS rule_created_at, e.id AS endpoint_id
  FROM alert_rules r
  JOIN alert_channels c ON c.id = r.channel_id AND c.enabled
  JOIN endpoints e ON (r.endpoint_id IS NULL OR e.id = r.endpoint_id)
                  AND e.revoked_at IS NULL AND @{owner_endpoints}
 WHERE r.enabled AND r.kind = %(kind)s
