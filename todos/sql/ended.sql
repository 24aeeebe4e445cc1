-- ended: classify the holder's miss (heartbeat, complete, fail, release) when its claim was
--   ended by someone else: the todo's latest attempt (seq = attempts_total, so nothing claimed
--   it since) was this caller's (endpoint, owner and fence, as _holder.sql checks them) and
--   closed canceled, timed_out or budget_exceeded. Only then does the holder learn why, and
--   who: the attempt's
--   summary (the cancel's reason, or which deadline passed) and the newest activity row that
--   names the attempt and was written as it closed or since (the human, the requester or the
--   sweeper). A run timeout (timed_out, summary 'run_timeout') is the reaper's, which writes no
--   row: none is looked for, so an earlier one (the answer that resumed the attempt, say) is
--   never taken for who ended it. Any other caller, and the holder with a wrong fence, match no row and
--   get the plain conflict, so the fence stays no oracle. Runs on a miss only.
-- params: id, endpoint_id, owner, token_hash, and the endpoint scope's parameters
-- returns: outcome, reason, actor_kind, actor_ref; no row when it is not that case.
-- Uses index: todos_pkey; todo_attempts_pkey (one probe); todo_activity_pkey (backward, from
--   the todo's newest row).
SELECT a.outcome, a.summary AS reason, act.actor_kind, act.actor_ref
  FROM todos t
  JOIN todo_attempts a ON a.todo_id = %(id)s AND a.seq = t.attempts_total
  LEFT JOIN LATERAL (
        SELECT v.actor_kind, v.actor_ref
          FROM todo_activity v
         WHERE v.todo_id = %(id)s AND v.attempt_seq = a.seq AND v.kind <> 'note'
           AND v.at >= a.ended_at
           AND NOT (a.outcome = 'timed_out' AND a.summary = 'run_timeout')
         ORDER BY v.seq DESC
         LIMIT 1) act ON true
 WHERE t.id = %(id)s AND @{scope}
   AND a.ended_at IS NOT NULL AND a.outcome IN ('canceled', 'timed_out', 'budget_exceeded')
   AND a.claimer_kind = 'endpoint' AND a.claimer_endpoint_id = %(endpoint_id)s
   AND a.owner = %(owner)s AND a.lease_token_hash IS NOT DISTINCT FROM %(token_hash)s::bytea
