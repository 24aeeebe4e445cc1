-- store: write a batch's spans in one statement, with the trace bindings it made, the spans
--   each attempt refused at its cap, and what the batch changed of each attempt's usage and
--   stored-span count, and each todo's span counts (todo_span_counts, what the caps read).
--   A span already stored is updated only when its end moved (an exporter's retry of the same
--   data changes nothing; a span re-sent with a corrected end is corrected). It is found by its
--   stored copy's received_at (counts.sql read it, under the todo's lock: lock.sql), which it
--   keeps: received_at is the partition key, so it is when the span was first stored
--   (docs/decisions/0040-span-partitions.md). A new span's is the transaction's now().
-- Times arrive as microseconds since the epoch: exact, and no timestamp parsing per span.
-- Usage: a model call's tokens and cost are added to its attempt's totals in the same
--   statement (`attempts`, which also bumps spans_stored and spans_dropped: one UPDATE a
--   row). A span updated here first takes back what its stored copy had added: every
--   sub-statement of a WITH reads the snapshot taken before the statement, so `old`
--   (todo_spans joined to the written keys) reads the copies as they were. `changes` returns
--   the deltas per todo and UTC hour for the todos' rows and usage_hours, which rollup.sql
--   adds after commit (otlp/store.py: this transaction never locks a todo row). The hour is
--   the one the span was first stored in (received_at), not the one its start names: a
--   budget's day counts what arrived that day, so a span dated yesterday (or tomorrow) still
--   spends today's (docs/decisions/0036-cost-and-budgets.md).
-- Stored spans: each attempt's spans_stored counts the spans written to it, less the stored
--   copies they replaced (so a corrected span that moved attempt moves its count too).
-- The spans arrive as one JSON array, a span an array of its columns in the order `input`
--   reads them (otlp/store.py, _spans): one encode in C on the way out, where 24 arrays cost
--   the driver a Python loop and an escaping pass per element.
-- params: spans (json: [todo_id, trace_id hex, span_id hex, parent_span_id hex, attempt_seq,
--   name, kind, category, tool, status_code, status_message, service_name, start_us, end_us,
--   attributes (JSON text), truncated, model, input_tokens, output_tokens, cache_read_tokens,
--   cache_write_tokens, reasoning_tokens, cost_usd (decimal text), received_at (the stored
--   copy's, ISO text; null for a new span)] per span, no key twice); resent (boolean: some
--   span has a stored copy); binding_todos,
--   binding_traces; drop_todos, drop_seqs, drop_counts
-- returns: written (rows inserted or updated), bound (new bindings), dropped (attempts bumped),
--   notified (the announcements, one of kind `spans` per todo written, sent after commit),
--   changes (json: [todo_id, hour epoch, input, output, cache_read, cache_write, reasoning,
--   unpriced, cost] per todo and hour whose usage moved; NULL when none did)
-- Uses index: todo_spans_pkey (the conflict's arbiter in the partition received_at routes to;
--   `old` by the whole key, one partition per span), todo_span_counts_pkey,
--   todo_trace_bindings_pkey,
--   todo_attempts_pkey, todos_pkey.
WITH input AS (
    SELECT e->>0 AS todo_id, decode(e->>1, 'hex') AS trace_id, decode(e->>2, 'hex') AS span_id,
           decode(e->>3, 'hex') AS parent_span_id, (e->>4)::int AS attempt_seq, e->>5 AS name,
           e->>6 AS kind, e->>7 AS category, e->>8 AS tool, e->>9 AS status_code,
           e->>10 AS status_message, e->>11 AS service_name, (e->>12)::bigint AS start_us,
           (e->>13)::bigint AS end_us, (e->>14)::jsonb AS attributes,
           (e->>15)::boolean AS truncated, e->>16 AS model, (e->>17)::bigint AS input_tokens,
           (e->>18)::bigint AS output_tokens, (e->>19)::bigint AS cache_read_tokens,
           (e->>20)::bigint AS cache_write_tokens, (e->>21)::bigint AS reasoning_tokens,
           (e->>22)::numeric AS cost_usd, (e->>23)::timestamptz AS received_at
      FROM jsonb_array_elements(%(spans)s::jsonb) AS e
),
written AS (
    INSERT INTO todo_spans AS s (todo_id, trace_id, span_id, parent_span_id, attempt_seq, name,
                                 kind, category, tool, status_code, status_message,
                                 service_name, start_at, end_at, attributes, truncated, model,
                                 input_tokens, output_tokens, cache_read_tokens,
                                 cache_write_tokens, reasoning_tokens, cost_usd, received_at)
    SELECT todo_id, trace_id, span_id, parent_span_id, attempt_seq, name, kind, category, tool,
           status_code, status_message, service_name,
           timestamptz 'epoch' + start_us * interval '1 microsecond',
           timestamptz 'epoch' + end_us * interval '1 microsecond',
           attributes, truncated, model, input_tokens, output_tokens, cache_read_tokens,
           cache_write_tokens, reasoning_tokens, cost_usd, coalesce(received_at, now())
      FROM input
    ON CONFLICT (todo_id, trace_id, span_id, received_at) DO UPDATE
       SET parent_span_id = EXCLUDED.parent_span_id, attempt_seq = EXCLUDED.attempt_seq,
           name = EXCLUDED.name, kind = EXCLUDED.kind, category = EXCLUDED.category,
           tool = EXCLUDED.tool, status_code = EXCLUDED.status_code,
           status_message = EXCLUDED.status_message, service_name = EXCLUDED.service_name,
           start_at = EXCLUDED.start_at, end_at = EXCLUDED.end_at,
           attributes = EXCLUDED.attributes, truncated = EXCLUDED.truncated,
           model = EXCLUDED.model, input_tokens = EXCLUDED.input_tokens,
           output_tokens = EXCLUDED.output_tokens,
           cache_read_tokens = EXCLUDED.cache_read_tokens,
           cache_write_tokens = EXCLUDED.cache_write_tokens,
           reasoning_tokens = EXCLUDED.reasoning_tokens, cost_usd = EXCLUDED.cost_usd
     WHERE s.end_at IS DISTINCT FROM EXCLUDED.end_at
    RETURNING s.todo_id, s.trace_id, s.span_id, s.received_at, s.attempt_seq, s.start_at,
              s.input_tokens, s.output_tokens, s.cache_read_tokens, s.cache_write_tokens,
              s.reasoning_tokens, s.cost_usd
),
-- The stored copies of the spans just updated, as they were (the statement's snapshot); by the
-- whole key, so each is looked up in its one partition. A probe per written span, never a join
-- the planner may cost from a day's partition while it was still empty (a plan kept for the
-- connection would then read the whole day every batch), and none when the batch re-sent
-- nothing (`resent`, counts.sql found no stored copy).
old AS (
    SELECT s.todo_id, s.attempt_seq, s.received_at, s.input_tokens, s.output_tokens,
           s.cache_read_tokens, s.cache_write_tokens, s.reasoning_tokens, s.cost_usd
      FROM written w
     CROSS JOIN LATERAL (
           SELECT s.*
             FROM todo_spans s
            WHERE %(resent)s AND s.todo_id = w.todo_id AND s.trace_id = w.trace_id
              AND s.span_id = w.span_id AND s.received_at = w.received_at
            LIMIT 1) s
),
-- Each model call's usage, + for the written copy and - for the stored one it replaced.
moved AS (
    SELECT w.todo_id, w.attempt_seq, w.received_at, w.input_tokens, w.output_tokens,
           w.cache_read_tokens, w.cache_write_tokens, w.reasoning_tokens,
           CASE WHEN w.cost_usd IS NULL THEN w.input_tokens + w.output_tokens ELSE 0 END
             AS unpriced, coalesce(w.cost_usd, 0) AS cost_usd
      FROM written w
     WHERE w.input_tokens IS NOT NULL
    UNION ALL
    SELECT o.todo_id, o.attempt_seq, o.received_at, -o.input_tokens, -o.output_tokens,
           -o.cache_read_tokens, -o.cache_write_tokens, -o.reasoning_tokens,
           CASE WHEN o.cost_usd IS NULL THEN -(o.input_tokens + o.output_tokens) ELSE 0 END,
           -coalesce(o.cost_usd, 0)
      FROM old o
     WHERE o.input_tokens IS NOT NULL
),
per_attempt AS (
    SELECT todo_id, seq, sum(stored) AS stored, sum(dropped) AS dropped, sum(i) AS i,
           sum(o) AS o, sum(cr) AS cr, sum(cw) AS cw, sum(r) AS r, sum(u) AS u, sum(c) AS c
      FROM (SELECT m.todo_id, m.attempt_seq AS seq, 0 AS stored, 0 AS dropped,
                   m.input_tokens AS i, m.output_tokens AS o, m.cache_read_tokens AS cr,
                   m.cache_write_tokens AS cw, m.reasoning_tokens AS r, m.unpriced AS u,
                   m.cost_usd AS c
              FROM moved m
             WHERE m.attempt_seq IS NOT NULL
            UNION ALL
            SELECT w.todo_id, w.attempt_seq, 1, 0, 0, 0, 0, 0, 0, 0, 0
              FROM written w
             WHERE w.attempt_seq IS NOT NULL
            UNION ALL
            SELECT o.todo_id, o.attempt_seq, -1, 0, 0, 0, 0, 0, 0, 0, 0
              FROM old o
             WHERE o.attempt_seq IS NOT NULL
            UNION ALL
            SELECT d.todo_id, d.seq, 0, d.n, 0, 0, 0, 0, 0, 0, 0
              FROM unnest(%(drop_todos)s::text[], %(drop_seqs)s::int[], %(drop_counts)s::int[])
                   AS d(todo_id, seq, n)) x
     GROUP BY todo_id, seq
),
-- Each todo's stored spans per attempt (0: no attempt), + for a span written and - for the
-- stored copy it replaced: the rows counts.sql reads for the caps. A -1 is always for a row
-- the store made when it wrote that copy, so no count goes below zero.
counted AS (
    INSERT INTO todo_span_counts AS c (todo_id, attempt_seq, spans)
    SELECT x.todo_id, x.seq, sum(x.n)
      FROM (SELECT w.todo_id, coalesce(w.attempt_seq, 0) AS seq, 1 AS n FROM written w
            UNION ALL
            SELECT o.todo_id, coalesce(o.attempt_seq, 0), -1 FROM old o) x
     GROUP BY x.todo_id, x.seq
    HAVING sum(x.n) <> 0
    ON CONFLICT (todo_id, attempt_seq) DO UPDATE SET spans = c.spans + EXCLUDED.spans
    RETURNING 1
),
bound AS (
    INSERT INTO todo_trace_bindings (todo_id, trace_id)
    SELECT * FROM unnest(%(binding_todos)s::text[], %(binding_traces)s::bytea[])
    ON CONFLICT DO NOTHING
    RETURNING 1
),
attempts AS (
    UPDATE todo_attempts a
       SET spans_stored = a.spans_stored + d.stored, spans_dropped = a.spans_dropped + d.dropped,
           input_tokens = a.input_tokens + d.i, output_tokens = a.output_tokens + d.o,
           cache_read_tokens = a.cache_read_tokens + d.cr,
           cache_write_tokens = a.cache_write_tokens + d.cw,
           reasoning_tokens = a.reasoning_tokens + d.r,
           unpriced_tokens = a.unpriced_tokens + d.u, cost_usd = a.cost_usd + d.c
      FROM per_attempt d
     WHERE a.todo_id = d.todo_id AND a.seq = d.seq
    RETURNING d.dropped
)
SELECT (SELECT count(*) FROM written) AS written,
       (SELECT count(*) FROM bound) AS bound,
       (SELECT count(*) FROM attempts WHERE dropped > 0) AS dropped,
       -- One `spans` announcement per todo that had spans written, sent after commit
       -- (switchboard/lib/sql.py, switchboard/lib/changefeed.py; otlp/refresh.py throttles
       -- what the pages re-read). Ids and facts only.
       ARRAY(SELECT json_build_object('kind', 'spans', 'todo_id', t.id,
                                      'endpoint_id', t.endpoint_id,
                                      'queue', t.queue, 'state', t.state)::text
               FROM todos t
              WHERE t.id = ANY(ARRAY(SELECT DISTINCT w.todo_id FROM written w))) AS notified,
       (SELECT json_agg(json_build_array(h.todo_id, h.hour, h.i, h.o, h.cr, h.cw, h.r, h.u,
                                         h.c::text))
          FROM (SELECT m.todo_id,
                       extract(epoch FROM date_trunc('hour', m.received_at AT TIME ZONE 'UTC'))::bigint
                         AS hour,
                       sum(m.input_tokens) AS i, sum(m.output_tokens) AS o,
                       sum(m.cache_read_tokens) AS cr, sum(m.cache_write_tokens) AS cw,
                       sum(m.reasoning_tokens) AS r, sum(m.unpriced) AS u, sum(m.cost_usd) AS c
                  FROM moved m
                 GROUP BY 1, 2) h) AS changes
