-- store: write a batch's spans in one statement, with the trace bindings it made, the spans
--   each attempt refused at its cap, and what the batch changed of each attempt's usage and
--   stored-span count.
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
--   adds after commit (otlp/store.py: this transaction never locks a todo row).
-- Stored spans: each attempt's spans_stored counts the spans written to it, less the stored
--   copies they replaced (so a corrected span that moved attempt moves its count too).
-- params: the span columns as arrays (todo_ids … cost_usd, one element per span, no key
--   twice), received_ats (the stored copy's, NULL for a new span); binding_todos,
--   binding_traces; drop_todos, drop_seqs, drop_counts
-- returns: written (rows inserted or updated), bound (new bindings), dropped (attempts bumped),
--   notified (the announcements, one of kind `spans` per todo written, sent after commit),
--   changes (json: [todo_id, hour epoch, input, output, cache_read, cache_write, reasoning,
--   unpriced, cost] per todo and hour whose usage moved; NULL when none did)
-- Uses index: todo_spans_pkey (the conflict's arbiter in the partition received_at routes to;
--   `old` by the whole key, one partition per span), todo_trace_bindings_pkey,
--   todo_attempts_pkey, todos_pkey.
WITH input AS (
    SELECT *
      FROM unnest(%(todo_ids)s::text[], %(trace_ids)s::bytea[], %(span_ids)s::bytea[],
                  %(parent_ids)s::bytea[], %(attempt_seqs)s::int[], %(names)s::text[],
                  %(kinds)s::text[], %(categories)s::text[], %(tools)s::text[],
                  %(status_codes)s::text[], %(status_messages)s::text[],
                  %(service_names)s::text[], %(start_us)s::bigint[], %(end_us)s::bigint[],
                  %(attributes)s::jsonb[], %(truncated)s::boolean[], %(models)s::text[],
                  %(input_tokens)s::bigint[], %(output_tokens)s::bigint[],
                  %(cache_read_tokens)s::bigint[], %(cache_write_tokens)s::bigint[],
                  %(reasoning_tokens)s::bigint[], %(cost_usd)s::numeric[],
                  %(received_ats)s::timestamptz[])
           AS i(todo_id, trace_id, span_id, parent_span_id, attempt_seq, name, kind, category,
                tool, status_code, status_message, service_name, start_us, end_us, attributes,
                truncated, model, input_tokens, output_tokens, cache_read_tokens,
                cache_write_tokens, reasoning_tokens, cost_usd, received_at)
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
-- whole key, so each is looked up in its one partition.
old AS (
    SELECT s.todo_id, s.attempt_seq, s.start_at, s.input_tokens, s.output_tokens,
           s.cache_read_tokens, s.cache_write_tokens, s.reasoning_tokens, s.cost_usd
      FROM written w
      JOIN todo_spans s
        ON s.todo_id = w.todo_id AND s.trace_id = w.trace_id AND s.span_id = w.span_id
       AND s.received_at = w.received_at
),
-- Each model call's usage, + for the written copy and - for the stored one it replaced.
moved AS (
    SELECT w.todo_id, w.attempt_seq, w.start_at, w.input_tokens, w.output_tokens,
           w.cache_read_tokens, w.cache_write_tokens, w.reasoning_tokens,
           CASE WHEN w.cost_usd IS NULL THEN w.input_tokens + w.output_tokens ELSE 0 END
             AS unpriced, coalesce(w.cost_usd, 0) AS cost_usd
      FROM written w
     WHERE w.input_tokens IS NOT NULL
    UNION ALL
    SELECT o.todo_id, o.attempt_seq, o.start_at, -o.input_tokens, -o.output_tokens,
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
                       extract(epoch FROM date_trunc('hour', m.start_at AT TIME ZONE 'UTC'))::bigint
                         AS hour,
                       sum(m.input_tokens) AS i, sum(m.output_tokens) AS o,
                       sum(m.cache_read_tokens) AS cr, sum(m.cache_write_tokens) AS cw,
                       sum(m.reasoning_tokens) AS r, sum(m.unpriced) AS u, sum(m.cost_usd) AS c
                  FROM moved m
                 GROUP BY 1, 2) h) AS changes
