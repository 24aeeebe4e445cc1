-- _rule_endpoints: the enabled rules of kind `kind` on enabled channels, a row per endpoint each
--   covers: the rule's own endpoint, or (endpoint NULL) every live endpoint its channel's owner
--   sees (a human's own and its teams', a team's own), now and later. The owner predicate is
--   switchboard/scope.py's (OWNER_TEAMS_SQL, read once per channel into `teams`, then
--   OWNER_ENDPOINTS_SQL: spliced as @{owner_teams} and @{owner_endpoints}), checked on the
--   rule's own endpoint too, so a rule never hears about an endpoint its owner no longer sees.
--   The channels are materialized first so that each reaches its endpoints by the indexes
--   (owner_id, team_id) instead of a filter over every endpoint for every rule.
-- params: kind
-- Uses index: alert_rules_kind_idx; team_members_human_team_key per human channel;
--   endpoints' owner_id and team_id indexes, ORed in a bitmap per channel.
WITH owners AS MATERIALIZED (
    SELECT c.id, c.owner_id, @{owner_teams} AS teams
      FROM alert_channels c
     WHERE c.enabled
)
SELECT r.id AS rule_id, r.channel_id, r.queue AS rule_queue, r.threshold, r.for_seconds,
       r.created_at AS rule_created_at, e.id AS endpoint_id
  FROM alert_rules r
  JOIN owners c ON c.id = r.channel_id
  JOIN endpoints e ON (r.endpoint_id IS NULL OR e.id = r.endpoint_id)
                  AND e.revoked_at IS NULL AND @{owner_endpoints}
 WHERE r.enabled AND r.kind = %(kind)s
