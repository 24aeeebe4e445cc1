-- overview_hours: recompute, for every hour in [from, to), each endpoint and queue's sums of its
--   minutes (todos/overview.py): the counts, the histograms added bucket by bucket, the highest
--   depth samples, and whether the queue was busy (an attempt ended, or a sample saw a todo). Replaces what the rows
--   held, so it is idempotent like overview_minutes.
-- params: from (hour-aligned), to
-- returns: one row per hour row written.
-- Uses index: overview_minutes_minute_idx (minute); overview_hours_pkey for the upsert.
WITH mins AS (
    SELECT m.endpoint_id, m.queue, date_trunc('hour', m.minute) AS hour, m.completed, m.failed,
           m.pending + m.in_flight + m.retry_due + m.dead AS held, m.wait_hist, m.run_hist,
           m.sampled_at, m.pending, m.in_flight
      FROM overview_minutes m
     WHERE m.minute >= %(from)s AND m.minute < %(to)s
),
sums AS (
    SELECT endpoint_id, queue, hour, sum(completed)::int AS completed,
           sum(failed)::int AS failed, bool_or(completed + failed + held > 0) AS busy,
           max(pending) FILTER (WHERE sampled_at IS NOT NULL) AS pending_max,
           max(in_flight) FILTER (WHERE sampled_at IS NOT NULL) AS in_flight_max
      FROM mins
     GROUP BY endpoint_id, queue, hour
),
waits AS (
    SELECT endpoint_id, queue, hour, array_agg(n ORDER BY k)::int[] AS hist
      FROM (SELECT m.endpoint_id, m.queue, m.hour, u.k, sum(u.n) AS n
              FROM mins m CROSS JOIN unnest(m.wait_hist) WITH ORDINALITY AS u(n, k)
             GROUP BY m.endpoint_id, m.queue, m.hour, u.k) b
     GROUP BY endpoint_id, queue, hour
),
runs AS (
    SELECT endpoint_id, queue, hour, array_agg(n ORDER BY k)::int[] AS hist
      FROM (SELECT m.endpoint_id, m.queue, m.hour, u.k, sum(u.n) AS n
              FROM mins m CROSS JOIN unnest(m.run_hist) WITH ORDINALITY AS u(n, k)
             GROUP BY m.endpoint_id, m.queue, m.hour, u.k) b
     GROUP BY endpoint_id, queue, hour
)
INSERT INTO overview_hours AS h (endpoint_id, queue, hour, completed, failed, busy,
                                 pending_max, in_flight_max, wait_hist, run_hist)
SELECT s.endpoint_id, s.queue, s.hour, s.completed, s.failed, s.busy, s.pending_max,
       s.in_flight_max, w.hist, r.hist
  FROM sums s
  LEFT JOIN waits w ON w.endpoint_id = s.endpoint_id AND w.queue = s.queue AND w.hour = s.hour
  LEFT JOIN runs r ON r.endpoint_id = s.endpoint_id AND r.queue = s.queue AND r.hour = s.hour
    ON CONFLICT (endpoint_id, queue, hour) DO UPDATE
   SET completed = EXCLUDED.completed, failed = EXCLUDED.failed, busy = EXCLUDED.busy,
       pending_max = EXCLUDED.pending_max, in_flight_max = EXCLUDED.in_flight_max,
       wait_hist = EXCLUDED.wait_hist, run_hist = EXCLUDED.run_hist
RETURNING 1
