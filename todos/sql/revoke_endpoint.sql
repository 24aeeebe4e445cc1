-- revoke_endpoint: a human who manages the endpoint (@{manages}: its owner, or an admin of its
--   team) revokes it; its pending and unfinished todos are
--   dead-lettered and their open attempts close revoked/dead_lettered. Its keys stop working
--   with it (key lookup refuses a revoked endpoint).
-- params: endpoint_id, scope_human_id
-- returns: revoked (bool), dead_lettered (text[] of todo ids), attempts_closed (open attempts
--   closed; fewer than dead_lettered, since a pending todo is dead-lettered but has no attempt),
--   notified (one announcement per dead-lettered todo, sent after commit).
-- revoking: the endpoint this revokes (its id), by default revoking it now. REVOKED_SWEEP
--   (todos/lifecycle/statements.py) reads an endpoint already revoked instead, and dead-letters
--   what it still holds: the revoke runs it once after itself, for a todo whose claim committed
--   while the revoke waited on its row (the revoke's snapshot could not see that claim's
--   attempt, _current_attempt.sql).
-- Uses index: endpoints_pkey, todos_board_state_idx (endpoint_id, state, …).
WITH ep AS (@{revoking}),
upd AS (
    UPDATE todos t
       SET state = 'failed', next_retry_at = NULL, @{unheld},
           finished_at = now(), updated_at = now()
      FROM ep
     WHERE t.endpoint_id = ep.id
       AND @{unfinished}
    RETURNING t.id, t.endpoint_id, t.queue, t.state, t.attempts_total
),
closed AS (
    UPDATE todo_attempts a
       SET ended_at = now(), outcome = 'revoked', disposition = 'dead_lettered'
      FROM upd
     WHERE a.todo_id = upd.id AND a.seq = upd.attempts_total AND a.ended_at IS NULL
    RETURNING a.todo_id
)
SELECT EXISTS (SELECT 1 FROM ep) AS revoked,
       COALESCE((SELECT array_agg(upd.id ORDER BY upd.id) FROM upd), '{}') AS dead_lettered,
       (SELECT count(*) FROM closed) AS attempts_closed,
       -- One announcement per dead-lettered todo, sent after commit (_notify.sql).
       COALESCE((SELECT array_agg(@{notify_changed}) FROM upd), '{}') AS notified
