-- resolve_alerts: the live alerts of condition kind `kind` whose rule and subject the
--   evaluator no longer found firing (`rule_ids`, `subjects`: what still fires). A pending one
--   goes (it never opened, nothing was sent); an open one is resolved and, on an enabled
--   channel, queues its 'resolved' message. Never for event kinds: an event has nothing to
--   clear (docs/guides/alerts.md).
-- params: kind, rule_ids, subjects
-- returns: resolved (how many alerts were resolved).
-- Uses index: alerts_live_idx (kind) WHERE state IN ('pending', 'open').
WITH given AS (
    SELECT * FROM unnest(%(rule_ids)s::bigint[], %(subjects)s::text[]) AS g(rule_id, subject)
),
gone AS (
    SELECT a.id, a.state
      FROM alerts a
     WHERE a.kind = %(kind)s AND a.state IN ('pending', 'open')
       AND NOT EXISTS (SELECT 1 FROM given g
                        WHERE g.rule_id = a.rule_id AND g.subject = a.subject)
       FOR UPDATE SKIP LOCKED
),
dropped AS (
    DELETE FROM alerts a USING gone WHERE a.id = gone.id AND gone.state = 'pending'
),
resolved AS (
    UPDATE alerts a
       SET state = 'resolved', resolved_at = now()
      FROM gone
     WHERE a.id = gone.id AND gone.state = 'open'
    RETURNING a.id, a.channel_id
),
told AS (
    INSERT INTO alert_deliveries (alert_id, channel_id, message)
    SELECT r.id, r.channel_id, 'resolved'
      FROM resolved r JOIN alert_channels c ON c.id = r.channel_id AND c.enabled
    RETURNING 1
)
SELECT count(*) AS resolved FROM resolved
