-- forget_alerts: write the alerts forgotten_alerts.sql read without their todo's content: the
--   summary and detail alerts/messages.py made of what the detail may keep (`forgotten`). The
--   row, its state and times, its subject (the todo's id and a moment) and its messages stay:
--   a message still queued goes out with the new summary.
-- params: ids, summaries, details
-- returns: id per alert rewritten.
-- Uses index: alerts_pkey.
UPDATE alerts a
   SET summary = g.summary, detail = g.detail
  FROM unnest(%(ids)s::bigint[], %(summaries)s::text[], %(details)s::jsonb[])
    AS g(id, summary, detail)
 WHERE a.id = g.id
RETURNING a.id
