-- over_cap: dead-letter the unfinished todos whose cost reached their max_cost_usd, without
--   retry: an open attempt closes budget_exceeded/dead_lettered, its summary the cost against
--   the cap as people read them (`cap_money`, `cost_money`: switchboard/lib/text.py's
--   money_sql, "max_cost_usd $0.50 reached ($0.60 spent)"), so the holder's next heartbeat or
--   report learns it from ended.sql as a cancel's holder does; a `budget` activity row of the
--   sweeper records it, its detail the exact sums at the columns' scale (6 decimals; a finer
--   cost as fine as it is, todos/limits.py's usd_text). Over cap is `cost_usd >= max_cost_usd
--   AND cost_usd > 0`: a cap of $0 allows no priced spend (the first call with a positive cost
--   ends the todo) and never ends one for $0 spent (otlp/sql/rollup.sql's over_cap and
--   todos/limits.py's reached say the same). Called by the
--   OTLP ingest for the todos its batch took past their cap (ids) and by the sweeper's pass
--   (ids NULL: the partial index's capped unfinished todos). SKIP LOCKED, as every sweep: a row
--   a transition holds is left for the next pass, and so is an in-flight todo whose open
--   attempt this snapshot cannot see (_current_attempt.sql).
-- params: ids (text[] or NULL for every capped unfinished todo), limit
-- returns: id, endpoint_id, from_state, cost_usd, max_cost_usd per dead-lettered todo.
-- Uses index: todos_over_cap_idx (id) WHERE max_cost_usd IS NOT NULL AND finished_at IS
--   NULL; todos_pkey to lock each.
WITH due AS (
    SELECT t.id, t.state AS from_state
      FROM todos t
     WHERE t.max_cost_usd IS NOT NULL AND t.finished_at IS NULL
       AND (%(ids)s::text[] IS NULL OR t.id = ANY(%(ids)s::text[]))
       AND t.cost_usd >= t.max_cost_usd AND t.cost_usd > 0
       AND (t.state NOT IN ('claimed', 'input-required', 'auth-required') OR @{current_attempt})
     ORDER BY t.id
     LIMIT %(limit)s
       FOR UPDATE OF t SKIP LOCKED
),
upd AS (
    UPDATE todos t
       SET activity_seq = t.activity_seq + 1, state = 'failed', next_retry_at = NULL,
           finished_at = now(), @{unheld}, updated_at = now()
      FROM due
     WHERE t.id = due.id
    RETURNING t.*, due.from_state
),
closed AS (
    UPDATE todo_attempts a
       SET ended_at = now(), outcome = 'budget_exceeded', disposition = 'dead_lettered',
           summary = 'max_cost_usd ' || @{cap_money} || ' reached (' || @{cost_money}
                     || ' spent)'
      FROM upd
     WHERE a.todo_id = upd.id AND a.seq = upd.attempts_total AND a.ended_at IS NULL
    RETURNING a.todo_id, a.seq
),
activity AS (
    INSERT INTO todo_activity (todo_id, endpoint_id, seq, attempt_seq, kind, actor_kind,
                               actor_ref, message, truncated, detail)
    SELECT upd.id, upd.endpoint_id, upd.activity_seq, (SELECT c.seq FROM closed c WHERE c.todo_id = upd.id),
           'budget', 'system', 'sweeper', 'max_cost_usd reached', false,
           jsonb_build_object('action', 'dead_letter', 'from', upd.from_state, 'to', upd.state,
                              'reason', 'max_cost_usd',
                              'cost_usd', CASE WHEN round(upd.cost_usd, 6) = upd.cost_usd
                                               THEN round(upd.cost_usd, 6)::text
                                               ELSE trim_scale(upd.cost_usd)::text END,
                              'max_cost_usd', round(upd.max_cost_usd, 6)::text)
      FROM upd
)
SELECT upd.id, upd.endpoint_id, upd.from_state, upd.cost_usd, upd.max_cost_usd,
       @{notify_changed} AS notified
  FROM upd
