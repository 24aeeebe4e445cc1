-- overview_sample: the queue-depth sample (todos/overview.py): per endpoint and queue, the todos
--   pending, in flight, failed with a retry scheduled, and dead letters, and the oldest pending
--   todo's creation, written into this minute's overview_minutes row (the last sample of a
--   minute stands for it). A queue busy within the last day that holds nothing now gets a
--   sample of zeros, so its depth falls to 0 on the page instead of vanishing.
--   Not owner-scoped: the page scopes its reads.
-- params: none
-- returns: one row per sample written.
-- Uses index: none that helps much: the planner reads the unfinished todos and dead letters
--   through todos_board_state_idx (endpoint_id, state, …) when they are few among many, and
--   scans todos when they are not (a parallel sequential scan, 0.3-0.5 s at a million todos with
--   one in nine of them matching, cold). Run at most once per todos.overview.EVERY_SECONDS,
--   never by a page (docs/decisions/0017-overview-rollups.md).
WITH counts AS (
    SELECT t.endpoint_id, t.queue,
           count(*) FILTER (WHERE t.state = 'pending') AS pending,
           count(*) FILTER (WHERE @{in_flight}) AS in_flight,
           count(*) FILTER (WHERE t.state = 'failed' AND t.next_retry_at IS NOT NULL) AS retry_due,
           count(*) FILTER (WHERE @{dead_letter}) AS dead,
           min(t.created_at) FILTER (WHERE t.state = 'pending') AS oldest_pending_at
      FROM todos t
     WHERE t.state IN ('pending', 'claimed', 'input-required', 'auth-required', 'failed')
     GROUP BY t.endpoint_id, t.queue
),
busy AS (
    SELECT DISTINCT h.endpoint_id, h.queue
      FROM overview_hours h
     WHERE h.hour >= date_trunc('hour', now()) - interval '1 day' AND h.busy
)
INSERT INTO overview_minutes AS m (endpoint_id, queue, minute, sampled_at, pending, in_flight,
                                   retry_due, dead, oldest_pending_at)
SELECT coalesce(c.endpoint_id, b.endpoint_id), coalesce(c.queue, b.queue),
       date_trunc('minute', now()), now(), coalesce(c.pending, 0), coalesce(c.in_flight, 0),
       coalesce(c.retry_due, 0), coalesce(c.dead, 0), c.oldest_pending_at
  FROM counts c
  FULL JOIN busy b ON b.endpoint_id = c.endpoint_id AND b.queue = c.queue
    ON CONFLICT (endpoint_id, queue, minute) DO UPDATE
   SET sampled_at = EXCLUDED.sampled_at, pending = EXCLUDED.pending,
       in_flight = EXCLUDED.in_flight, retry_due = EXCLUDED.retry_due, dead = EXCLUDED.dead,
       oldest_pending_at = EXCLUDED.oldest_pending_at
RETURNING 1
