-- live_kinds: the rule kinds the evaluators have work for this pass: those with an enabled rule
--   (something may fire) or a live alert (something may resolve). The others are skipped, so
--   a deployment without alerts pays this one statement a pass.
-- params: none
-- returns: kind.
-- Uses index: alert_rules_kind_idx; alerts_live_idx (kind) WHERE state IN ('pending', 'open').
SELECT r.kind FROM alert_rules r WHERE r.enabled
UNION
SELECT a.kind FROM alerts a WHERE a.state IN ('pending', 'open')
