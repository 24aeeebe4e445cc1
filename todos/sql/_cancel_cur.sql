-- cancel_cur: the UPDATE that cancels the todos a statement's `cur` locked and re-checked (their
-- id and from_state): canceled, unheld, no retry due, finished now. One text for cancel.sql and
-- bulk_cancel.sql, so one todo and a filter's todos are canceled alike.
UPDATE todos t
   SET @{activity_bump}state = 'canceled', @{unheld}, next_retry_at = NULL,
       finished_at = now(), updated_at = now()
  FROM cur
 WHERE t.id = cur.id
RETURNING t.*, cur.from_state
