-- complete_no_attempts: benchmark baseline "c", complete without attempt history: no closed arm
--   and no fence (the fence comes with attempt history), so the guard is endpoint + owner. It
--   announces the change as the product does (todos/sql/_notify_changed.sql): the change feed is
--   not attempt history.
-- params: id, endpoint_id, owner, result (jsonb); complete's other parameters are ignored.
-- returns: the todo and attempt_seq, the shape complete has; no row on a miss.
-- Uses index: todos_pkey.
WITH upd AS (
UPDATE todos t
   SET state = 'completed', result = %(result)s, owner = NULL, lease_expires_at = NULL,
       finished_at = now(), updated_at = now()
 -- By todos_pkey alone, as the product's statements (see "Plans" in todos/lifecycle/core.py).
 WHERE t.id = %(id)s
   AND CASE WHEN t.state = 'claimed' AND t.endpoint_id = %(endpoint_id)s AND t.owner = %(owner)s
            THEN true ELSE false END
RETURNING t.*, t.attempts_total AS attempt_seq
)
SELECT upd.*, @{notify_changed} AS notified FROM upd
