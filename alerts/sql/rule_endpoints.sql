-- rule_endpoints: the endpoints each enabled rule of `kind` covers (_rule_endpoints.sql), for
--   the evaluators that match in Python (the budgets, alerts/evaluate.py); the channel says
--   whose warning an exceeded budget supersedes.
-- params: kind
-- returns: rule_id, channel_id, rule_queue, threshold, for_seconds, rule_created_at, endpoint_id.
-- Uses index: alert_rules_kind_idx; team_members_human_team_key per human channel; the
--   endpoints' owner_id and team_id indexes, ORed in a bitmap per channel.
@{rule_endpoints}
