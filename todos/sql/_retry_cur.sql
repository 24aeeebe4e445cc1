-- retry_cur: the UPDATE that sends the todos a statement's `cur` locked and re-checked (their id
-- and from_state) back to pending with a fresh budget: no attempt counted, no result, no retry
-- due, unheld, no input request. One text for retry.sql and bulk_retry.sql.
UPDATE todos t
   SET @{activity_bump}state = 'pending', attempt = 0, result = NULL, next_retry_at = NULL,
       finished_at = NULL, @{unheld}, input_request = NULL,
       updated_at = now()
  FROM cur
 WHERE t.id = cur.id
RETURNING t.*, cur.from_state
