-- claim_tail: everything a claim does once `cand` has locked its row (cand_id, prior_state,
-- prior_total). All arms run against one snapshot and commit together; their order is
-- unspecified, which is why one-open-attempt is a deferred constraint. `closed` depends only on
-- cand, never on upd, so nothing depends on that order either.
closed AS (
    -- A takeover closes the dead attempt first. Keyed by scalar subqueries on cand (run first,
    -- as InitPlans), not joined to it: joined, the planner may put todo_attempts outside and
    -- read every open attempt through todo_attempts_one_open whenever the statistics show few
    -- (docs/decisions/0009-keyed-arms.md). No takeover: the first subquery is NULL, no row.
    -- A lease that lapsed at its run timeout (the lease cap, _lease_cap.sql) was ended by that
    -- timeout, as the reaper would say: timed_out, summary run_timeout; any other lapse is
    -- lease_expired. The run timeout is read from the todo only here, on a takeover (a SET
    -- expression of the one matched row), so a plain claim pays nothing for it.
    UPDATE todo_attempts a
       SET ended_at = now(), disposition = 'requeued',
           (outcome, summary) = (
               SELECT CASE WHEN run_out THEN 'timed_out' ELSE 'lease_expired' END,
                      CASE WHEN run_out THEN 'run_timeout' END
                 FROM (SELECT COALESCE(a.claimed_at + @{run_timeout} * interval '1 second'
                                       <= now(), false) AS run_out
                         FROM todos t WHERE t.id = a.todo_id) r)
     WHERE a.todo_id = (SELECT cand_id FROM cand WHERE prior_state = 'claimed')
       AND a.seq = (SELECT prior_total FROM cand) AND a.ended_at IS NULL
    RETURNING a.*
),
pruned AS (
    -- The per-todo cap: once this claim takes attempts_total past it, closed attempts older than
    -- the newest `attempts_cap` go. Rare: usually the guard on prior_total deletes nothing.
    DELETE FROM todo_attempts a
     USING cand
     WHERE a.todo_id = cand.cand_id AND a.ended_at IS NOT NULL
       AND cand.prior_total + 1 > %(attempts_cap)s
       AND a.seq <= cand.prior_total + 1 - %(attempts_cap)s
    RETURNING a.seq
),
upd AS (
    UPDATE todos t
       SET @{activity_bump}state = 'claimed', owner = %(owner)s,
           -- The lease never runs past the todo's finish_by or this claim's run timeout
           -- (_lease_cap.sql; LEAST ignores the NULLs of limits not set).
           lease_expires_at = LEAST(now() + %(ttl_seconds)s * interval '1 second', @{lease_cap}),
           -- The TTL this claim chose (a heartbeat that names none extends by it), and its label.
           lease_ttl_seconds = %(ttl_seconds)s, claimant = %(claimant)s,
           -- The todo's copies of the new attempt's fence and heartbeat write (_fence.sql).
           lease_token_hash = %(token_hash)s::bytea, attempt_heartbeat_at = NULL,
           attempt = t.attempt + 1, attempts_total = t.attempts_total + 1,
           attempts_pruned = t.attempts_pruned + (SELECT count(*) FROM pruned),
           claimed_at = now(), next_retry_at = NULL, finished_at = NULL, updated_at = now(),
           -- Whether this hold is one of its queue's max_in_flight slots: its end then rings
           -- the queue's waiters (_slot_freed.sql).
           holds_limited_slot = @{holds_limited_slot}
      FROM cand
     WHERE t.id = cand.cand_id
    RETURNING @{returned}, cand.prior_state
),
opened AS (
    -- seq is attempts_total after the increment: no sequence object, no max(seq) scan, never
    -- reset (a human retry resets attempt, not attempts_total).
    -- trace_id: the attempt's trace, which spans bind to (otlp/sql/bind.sql); NULL for none.
    -- endpoint_id: the todo's, copied for the Activity feed's walk by endpoint
    -- (attempts/migrations/0007_endpoint.py).
    INSERT INTO todo_attempts (todo_id, endpoint_id, seq, attempt, claimer_kind,
                               claimer_endpoint_id, claimer_session, owner, claimant, claimed_at,
                               lease_expires_at, lease_token_hash, trace_id)
    SELECT upd.id, upd.endpoint_id, upd.attempts_total, upd.attempt, %(claimer_kind)s,
           %(claimer_endpoint_id)s, %(claimer_session)s, %(owner)s, %(claimant)s, now(),
           upd.lease_expires_at, %(token_hash)s::bytea, %(trace_id)s::bytea
      FROM upd
    RETURNING seq
)@{activity}@{queue_spend},
prior AS (
    -- The newest closed attempts as they stand once this statement commits: the one the takeover
    -- closed (seen only through `closed`, the snapshot still has it open), then those closed
    -- before, less any the cap just pruned. Read here, under the row lock, so the claim needs
    -- no second round trip. How many: todos/limits.py PRIOR_ATTEMPTS, spliced in at load.
    SELECT p.* FROM (
        SELECT c.* FROM closed c
        UNION ALL
        SELECT a.* FROM todo_attempts a, cand
         WHERE a.todo_id = cand.cand_id AND a.ended_at IS NOT NULL
           AND a.seq > cand.prior_total + 1 - %(attempts_cap)s
    ) p
    ORDER BY p.seq DESC
    LIMIT @{prior_attempts}
)
SELECT upd.*,
       (SELECT seq FROM opened) AS attempt_seq, @{notify_changed} AS notified,
       (SELECT COALESCE(jsonb_agg(to_jsonb(p) - 'lease_token_hash' ORDER BY p.seq DESC), '[]')
          FROM prior p) AS prior_attempts,
       -- True when this statement's snapshot predates the attempt that last touched the todo (it
       -- waited on the row, see _current_attempt.sql): `prior` may then miss that attempt's
       -- ending, and the caller re-reads the history after commit instead.
       (upd.prior_state <> 'claimed' AND upd.attempts_total > 1
        -- OFFSET 0: a probe by key, never a hashed read of every attempt (_current_attempt.sql).
        AND NOT EXISTS (SELECT 1 FROM todo_attempts a
                         WHERE a.todo_id = upd.id AND a.seq = upd.attempts_total - 1
                           AND a.ended_at IS NOT NULL
                        OFFSET 0)) AS prior_stale
  FROM upd
