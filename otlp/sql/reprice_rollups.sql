-- reprice_rollups: rebuild from the spans the usage totals of every todo and attempt with a
--   model call started since `since` (manage.py reprice; reprice_hours.sql does the hours). One statement, one snapshot: run it when no ingest writes those todos' spans,
--   or re-run it after (an ingest's additions that commit while it runs may be overwritten).
-- params: since
-- returns: todos, attempts (rows rewritten).
-- Uses index: todos_pkey, todo_attempts_pkey; a scan of todo_spans.
WITH touched AS (
    SELECT DISTINCT s.todo_id FROM todo_spans s
     WHERE s.input_tokens IS NOT NULL AND s.start_at >= %(since)s
),
per_attempt AS (
    SELECT s.todo_id, s.attempt_seq,
           sum(s.input_tokens) AS i, sum(s.output_tokens) AS o, sum(s.cache_read_tokens) AS cr,
           sum(s.cache_write_tokens) AS cw, sum(s.reasoning_tokens) AS r,
           sum(CASE WHEN s.cost_usd IS NULL THEN s.input_tokens + s.output_tokens ELSE 0 END)
             AS u, coalesce(sum(s.cost_usd), 0) AS c
      FROM todo_spans s
     WHERE s.todo_id IN (SELECT todo_id FROM touched) AND s.input_tokens IS NOT NULL
     GROUP BY s.todo_id, s.attempt_seq
),
attempts AS (
    UPDATE todo_attempts a
       SET input_tokens = p.i, output_tokens = p.o, cache_read_tokens = p.cr,
           cache_write_tokens = p.cw, reasoning_tokens = p.r, unpriced_tokens = p.u,
           cost_usd = p.c
      FROM per_attempt p
     WHERE a.todo_id = p.todo_id AND a.seq = p.attempt_seq
    RETURNING 1
),
todos_set AS (
    UPDATE todos t
       SET input_tokens = p.i, output_tokens = p.o, cache_read_tokens = p.cr,
           cache_write_tokens = p.cw, reasoning_tokens = p.r, unpriced_tokens = p.u,
           cost_usd = p.c
      FROM (SELECT todo_id, sum(i) AS i, sum(o) AS o, sum(cr) AS cr, sum(cw) AS cw,
                   sum(r) AS r, sum(u) AS u, sum(c) AS c
              FROM per_attempt GROUP BY todo_id) p
     WHERE t.id = p.todo_id
    RETURNING 1
)
SELECT (SELECT count(*) FROM todos_set) AS todos, (SELECT count(*) FROM attempts) AS attempts
