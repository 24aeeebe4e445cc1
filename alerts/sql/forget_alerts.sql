-- forget_alerts: write the alerts forgotten_alerts.sql read without their todo's content: the
--   summary and detail alerts/messages.py made of what the detail may keep (`forgotten`). The
--   row, its state and times, its subject (the todo's id and a moment) and its messages stay: a
--   message not yet claimed for sending goes out with the new summary (one the sender claimed
--   before this commits goes out as it read it: docs/guides/alerts.md, "Keeping"). With `unlink` (todo retention: the todo is being deleted) the row no longer names the todo
--   (`todo_id` NULL; the summary and subject still carry its id).
-- params: ids, summaries, details, unlink
-- returns: id per alert rewritten.
-- Uses index: alerts_pkey.
UPDATE alerts a
   SET summary = g.summary, detail = g.detail,
       todo_id = CASE WHEN %(unlink)s THEN NULL ELSE a.todo_id END
  FROM unnest(%(ids)s::bigint[], %(summaries)s::text[], %(details)s::jsonb[])
    AS g(id, summary, detail)
 WHERE a.id = g.id
RETURNING a.id
