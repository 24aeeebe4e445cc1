-- revoked_todos: the rest of revoke_endpoint.sql and revoked_sweep.sql after their `ep` (the
-- endpoint revoked, as one id): its unfinished todos dead-lettered, their open attempts closed
-- revoked/dead_lettered, and the statement's one row. One text for both, so a revoke and its
-- sweep dead-letter alike.
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
