-- revoked_sweep: what an endpoint the human manages still holds once it is revoked,
--   dead-lettered as revoke_endpoint.sql does (_revoked_todos.sql). The revoke runs it once
--   after itself: a claim that committed while the revoke waited on one of the endpoint's todos
--   took a todo the revoke could not dead-letter, its snapshot blind to that claim's attempt
--   (_current_attempt.sql); this statement's snapshot sees it.
-- params: endpoint_id, scope_human_id
-- returns: as revoke_endpoint.sql (revoked: the endpoint is revoked and the human manages it).
-- Uses index: endpoints_pkey, todos_board_state_idx (endpoint_id, state, …).
WITH ep AS (
    SELECT e.id FROM endpoints e
     WHERE e.id = %(endpoint_id)s AND @{manages} AND e.revoked_at IS NOT NULL
),
@{revoked_todos}
