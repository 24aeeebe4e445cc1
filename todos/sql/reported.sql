-- reported: classify a miss of the holder's complete or fail, which may be a retry of a report
--   that already took effect (its answer lost on the way). Like in_scope.sql, no row means no
--   todo in scope (not found). On a row, `replayed` is true exactly when the todo's latest
--   attempt (seq = attempts_total, so nothing has claimed it since) was claimed by this endpoint
--   under this owner and fence and has already ended with `outcome`: the report being retried.
--   The caller then answers the success it answered the first time, from the row as it stands,
--   and changes nothing; otherwise it is a conflict. A fail closed by reject left the todo
--   rejected, which a fail never does, so that reject is not taken for a fail.
-- params: id, outcome ('completed' | 'failed'), endpoint_id, owner, token_hash, and the
--   endpoint scope's parameters
-- returns: the todo, attempt_seq and replayed; no row when the todo is out of scope.
-- Uses index: todos_pkey; todo_attempts_pkey (one probe).
SELECT @{returned}, t.attempts_total AS attempt_seq,
       COALESCE((SELECT a.outcome = %(outcome)s AND a.claimer_kind = 'endpoint'
                        AND a.claimer_endpoint_id = %(endpoint_id)s AND a.owner = %(owner)s
                        AND a.lease_token_hash IS NOT DISTINCT FROM %(token_hash)s::bytea
                   FROM todo_attempts a
                  WHERE a.todo_id = %(id)s AND a.seq = t.attempts_total
                    AND a.ended_at IS NOT NULL), false)
       AND t.state <> 'rejected' AS replayed
  FROM todos t
 WHERE t.id = %(id)s AND @{scope}
