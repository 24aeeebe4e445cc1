-- trim_alerts: forget the resolved and event alerts older than `keep_days` (their messages go
--   with them by cascade). Never one younger than the evaluators' look-back, which the event
--   alerts' rows deduplicate.
-- params: keep_days
-- returns: id per alert removed.
-- Uses index: alerts_channel_idx is not used; a sequential scan once per retention pass.
DELETE FROM alerts a
 WHERE a.state IN ('resolved', 'event')
   AND coalesce(a.resolved_at, a.opened_at, a.since) < now() - make_interval(days => %(keep_days)s)
RETURNING a.id
