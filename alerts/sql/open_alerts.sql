-- open_alerts: what the evaluators found firing (one row per rule and subject, as arrays).
--   A new one is inserted, one live alert per rule and subject (alerts_one_live: no storm):
--   an event's as 'event', a depth rule's with a for_seconds as 'pending', any other as 'open'.
--   A pending one whose condition has held for its rule's for_seconds opens. Each alert that
--   opens (or event that fires) queues its 'opened' message for the sweeper to send after
--   this commits (alerts/deliver.py).
-- params: event, rule_ids, subjects, endpoint_ids, queues, todo_ids, summaries, details
-- returns: opened (how many messages were queued).
-- Uses index: alerts_one_live (rule_id, subject) WHERE state IN (…); alert_rules_pkey.
WITH given AS (
    SELECT *
      FROM unnest(%(rule_ids)s::bigint[], %(subjects)s::text[], %(endpoint_ids)s::uuid[],
                  %(queues)s::text[], %(todo_ids)s::text[], %(summaries)s::text[],
                  %(details)s::jsonb[])
        AS g(rule_id, subject, endpoint_id, queue, todo_id, summary, detail)
),
fresh AS (
    INSERT INTO alerts AS a (rule_id, channel_id, kind, subject, endpoint_id, queue, todo_id,
                             summary, detail, state, since, opened_at)
    SELECT g.rule_id, r.channel_id, r.kind, g.subject, g.endpoint_id, g.queue, g.todo_id,
           g.summary, g.detail, s.state, now(),
           CASE WHEN s.state <> 'pending' THEN now() END
      FROM given g
      JOIN alert_rules r ON r.id = g.rule_id
     CROSS JOIN LATERAL (
            SELECT CASE WHEN %(event)s THEN 'event'
                        WHEN r.kind = 'depth' AND r.for_seconds > 0 THEN 'pending'
                        ELSE 'open' END AS state) s
    ON CONFLICT (rule_id, subject) WHERE state IN ('pending', 'open', 'event') DO NOTHING
    RETURNING a.id, a.channel_id, a.state
),
promoted AS (
    UPDATE alerts a
       SET state = 'open', opened_at = now(), summary = g.summary, detail = g.detail
      FROM given g, alert_rules r
     WHERE a.rule_id = g.rule_id AND a.subject = g.subject AND a.state = 'pending'
       AND r.id = a.rule_id AND a.since <= now() - make_interval(secs => r.for_seconds)
    RETURNING a.id, a.channel_id
),
told AS (
    INSERT INTO alert_deliveries (alert_id, channel_id, message)
    SELECT f.id, f.channel_id, 'opened' FROM fresh f WHERE f.state <> 'pending'
    UNION ALL
    SELECT p.id, p.channel_id, 'opened' FROM promoted p
    RETURNING 1
)
SELECT count(*) AS opened FROM told
