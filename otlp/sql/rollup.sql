-- rollup: add a committed batch's usage changes to its todos' totals and to usage_hours, and
--   name the todos it took to or past their cost cap. Run after store.sql committed, as one
--   statement in a transaction of its own (otlp/store.py: the batch's transaction never locks
--   a todo row). `locked` takes the todos' rows in id order (a LockRows over the sort) before
--   the UPDATE joins them, so two rollups never wait on each other in a cycle; the hours are
--   upserted in key order for the same reason. Its commit does not wait for the WAL flush
--   (`cfg`, as the batch's: docs/decisions/0010-spans-commit-asynchronously.md).
-- params: todo_ids, hours (bigint[]: epoch seconds of the UTC hour), inputs, outputs,
--   cache_reads, cache_writes, reasonings, unpriced, costs (numeric[]): one element per todo
--   and hour, as store.sql's `changes` returns them
-- returns: todo_id of each todo now at or past its max_cost_usd with a positive cost, and
--   unfinished (a $0 cap allows no priced spend; $0 spent is never over it: over_cap.sql).
-- Uses index: todos_pkey (locked, then each update); usage_hours_pkey (the conflict target).
WITH cfg AS (
    SELECT set_config('synchronous_commit', 'off', true) AS previous
),
d AS (
    SELECT *
      FROM unnest(%(todo_ids)s::text[], %(hours)s::bigint[], %(inputs)s::bigint[],
                  %(outputs)s::bigint[], %(cache_reads)s::bigint[], %(cache_writes)s::bigint[],
                  %(reasonings)s::bigint[], %(unpriced)s::bigint[], %(costs)s::numeric[])
           AS d(todo_id, hour, i, o, cr, cw, r, u, c)
),
per_todo AS (
    SELECT todo_id, sum(i) AS i, sum(o) AS o, sum(cr) AS cr, sum(cw) AS cw, sum(r) AS r,
           sum(u) AS u, sum(c) AS c
      FROM d GROUP BY todo_id
),
locked AS MATERIALIZED (
    SELECT l.id FROM todos l
     WHERE l.id = ANY(%(todo_ids)s::text[]) AND (SELECT previous FROM cfg) IS NOT NULL
     ORDER BY l.id
       FOR UPDATE
),
upd AS (
    UPDATE todos t
       SET input_tokens = t.input_tokens + p.i, output_tokens = t.output_tokens + p.o,
           cache_read_tokens = t.cache_read_tokens + p.cr,
           cache_write_tokens = t.cache_write_tokens + p.cw,
           reasoning_tokens = t.reasoning_tokens + p.r,
           unpriced_tokens = t.unpriced_tokens + p.u, cost_usd = t.cost_usd + p.c
      FROM per_todo p, (SELECT count(*) FROM locked) n
     WHERE t.id = p.todo_id
    RETURNING t.id, t.max_cost_usd IS NOT NULL AND t.finished_at IS NULL
                    AND t.cost_usd >= t.max_cost_usd AND t.cost_usd > 0 AS over_cap
),
hours AS (
    INSERT INTO usage_hours AS h (endpoint_id, queue, hour, input_tokens, output_tokens,
                                  cache_read_tokens, cache_write_tokens, reasoning_tokens,
                                  unpriced_tokens, cost_usd)
    SELECT t.endpoint_id, t.queue, to_timestamp(d.hour), sum(d.i), sum(d.o), sum(d.cr),
           sum(d.cw), sum(d.r), sum(d.u), sum(d.c)
      FROM d JOIN todos t ON t.id = d.todo_id
     GROUP BY t.endpoint_id, t.queue, d.hour
     ORDER BY t.endpoint_id, t.queue, d.hour
    ON CONFLICT (endpoint_id, queue, hour) DO UPDATE
       SET input_tokens = h.input_tokens + EXCLUDED.input_tokens,
           output_tokens = h.output_tokens + EXCLUDED.output_tokens,
           cache_read_tokens = h.cache_read_tokens + EXCLUDED.cache_read_tokens,
           cache_write_tokens = h.cache_write_tokens + EXCLUDED.cache_write_tokens,
           reasoning_tokens = h.reasoning_tokens + EXCLUDED.reasoning_tokens,
           unpriced_tokens = h.unpriced_tokens + EXCLUDED.unpriced_tokens,
           cost_usd = h.cost_usd + EXCLUDED.cost_usd
)
SELECT id AS todo_id FROM upd WHERE over_cap
