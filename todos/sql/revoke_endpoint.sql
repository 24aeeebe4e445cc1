-- revoke_endpoint: a human who manages the endpoint (@{manages}: its owner, or an admin of its
--   team) revokes it; its pending and unfinished todos are
--   dead-lettered and their open attempts close revoked/dead_lettered (_revoked_todos.sql). Its
--   keys stop working with it (key lookup refuses a revoked endpoint).
-- params: endpoint_id, scope_human_id
-- returns: revoked (bool), dead_lettered (text[] of todo ids), attempts_closed (open attempts
--   closed; fewer than dead_lettered, since a pending todo is dead-lettered but has no attempt),
--   notified (one announcement per dead-lettered todo, sent after commit).
-- Uses index: endpoints_pkey, todos_board_state_idx (endpoint_id, state, …).
WITH ep AS (
    UPDATE endpoints e
       SET revoked_at = now()
     WHERE e.id = %(endpoint_id)s AND @{manages} AND e.revoked_at IS NULL
    RETURNING e.id
),
@{revoked_todos}
