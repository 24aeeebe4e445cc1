-- overview_minutes: recompute, for every minute in [from, to), each endpoint and queue's attempts
--   that ended completed or failed (reported failed, or died: lease_expired, reaped) and the
--   histograms of their run time (claimed → ended) and, for first attempts, their claim wait
--   (created → claimed), from todo_attempts; write them into overview_minutes, replacing what
--   the rows held (todos/overview.py). Idempotent: a minute computed twice holds the same
--   numbers, so a late commit inside the settle window is counted by the next pass.
--   A row in range whose attempts are gone (none ended there any more) is cleared.
-- params: from, to (minute-aligned)
-- returns: written (rows upserted), cleared (rows set back to zero).
-- Uses index: idx_todo_attempts_ended (ended_at DESC) WHERE ended_at IS NOT NULL AND outcome IN
--   (this statement's four outcomes: attempts/migrations/0007_endpoint.py), then todos_pkey
--   per attempt; overview_minutes_pkey for the upsert, overview_minutes_minute_idx to clear.
WITH ended AS (
    SELECT t.endpoint_id, t.queue, date_trunc('minute', a.ended_at) AS minute,
           a.outcome = 'completed' AS ok,
           @{run_bucket} AS run_k,
           CASE WHEN a.seq = 1 THEN @{wait_bucket} END AS wait_k
      FROM todo_attempts a
      JOIN todos t ON t.id = a.todo_id
     WHERE a.ended_at IS NOT NULL
       AND a.ended_at >= %(from)s AND a.ended_at < %(to)s
       AND a.outcome IN ('completed', 'failed', 'lease_expired', 'reaped')
),
groups AS (
    SELECT endpoint_id, queue, minute,
           count(*) FILTER (WHERE ok) AS completed,
           count(*) FILTER (WHERE NOT ok) AS failed,
           array_agg(wait_k) FILTER (WHERE wait_k IS NOT NULL) AS waits,
           array_agg(run_k) AS runs
      FROM ended
     GROUP BY endpoint_id, queue, minute
),
written AS (
    INSERT INTO overview_minutes AS m (endpoint_id, queue, minute, completed, failed,
                                       wait_hist, run_hist)
    SELECT g.endpoint_id, g.queue, g.minute, g.completed, g.failed,
           @{wait_hist}, @{run_hist}
      FROM groups g
        ON CONFLICT (endpoint_id, queue, minute) DO UPDATE
       SET completed = EXCLUDED.completed, failed = EXCLUDED.failed,
           wait_hist = EXCLUDED.wait_hist, run_hist = EXCLUDED.run_hist
    RETURNING 1
),
cleared AS (
    UPDATE overview_minutes m
       SET completed = 0, failed = 0, wait_hist = NULL, run_hist = NULL
     WHERE m.minute >= %(from)s AND m.minute < %(to)s
       AND (m.completed > 0 OR m.failed > 0)
       AND NOT EXISTS (SELECT 1 FROM groups g
                        WHERE g.endpoint_id = m.endpoint_id AND g.queue = m.queue
                          AND g.minute = m.minute)
    RETURNING 1
)
SELECT (SELECT count(*) FROM written) AS written, (SELECT count(*) FROM cleared) AS cleared
