-- heartbeat_no_attempts: benchmark baseline "hb-c", heartbeat without attempt history: no touched
--   arm and no fence, so it is one HOT update of the todo by primary key.
-- params: id, endpoint_id, owner, ttl_seconds; token_hash is passed and ignored.
-- returns: the todo and attempt_seq, the shape heartbeat has; no row on a miss.
-- Uses index: todos_pkey.
UPDATE todos t
   SET lease_expires_at = now() + %(ttl_seconds)s * interval '1 second', updated_at = now()
 -- By todos_pkey alone, as the product's statements (see "Plans" in todos/lifecycle/core.py).
 WHERE t.id = %(id)s
   AND CASE WHEN t.state = 'claimed' AND t.endpoint_id = %(endpoint_id)s AND t.owner = %(owner)s
            THEN true ELSE false END
RETURNING t.*, t.attempts_total AS attempt_seq
