-- store: write a batch's spans in one statement, with the trace bindings it made and the spans
--   each attempt refused at its cap.
--   A span already stored is updated only when its end moved (an exporter's retry of the same
--   data changes nothing; a span re-sent with a corrected end is corrected).
-- Times arrive as microseconds since the epoch: exact, and no timestamp parsing per span.
-- params: the span columns as arrays (todo_ids … truncated, one element per span, no key
--   twice); binding_todos, binding_traces; drop_todos, drop_seqs, drop_counts
-- returns: written (rows inserted or updated), bound (new bindings), dropped (attempts bumped),
--   notified (the announcements, one of kind `spans` per todo written, sent after commit)
-- Uses index: todo_spans_pkey, todo_trace_bindings_pkey, todo_attempts_pkey, todos_pkey.
WITH input AS (
    SELECT *
      FROM unnest(%(todo_ids)s::text[], %(trace_ids)s::bytea[], %(span_ids)s::bytea[],
                  %(parent_ids)s::bytea[], %(attempt_seqs)s::int[], %(names)s::text[],
                  %(kinds)s::text[], %(categories)s::text[], %(tools)s::text[],
                  %(status_codes)s::text[], %(status_messages)s::text[],
                  %(service_names)s::text[], %(start_us)s::bigint[], %(end_us)s::bigint[],
                  %(attributes)s::jsonb[], %(truncated)s::boolean[])
           AS i(todo_id, trace_id, span_id, parent_span_id, attempt_seq, name, kind, category,
                tool, status_code, status_message, service_name, start_us, end_us, attributes,
                truncated)
),
written AS (
    INSERT INTO todo_spans AS s (todo_id, trace_id, span_id, parent_span_id, attempt_seq, name,
                                 kind, category, tool, status_code, status_message,
                                 service_name, start_at, end_at, attributes, truncated)
    SELECT todo_id, trace_id, span_id, parent_span_id, attempt_seq, name, kind, category, tool,
           status_code, status_message, service_name,
           timestamptz 'epoch' + start_us * interval '1 microsecond',
           timestamptz 'epoch' + end_us * interval '1 microsecond',
           attributes, truncated
      FROM input
    ON CONFLICT (todo_id, trace_id, span_id) DO UPDATE
       SET parent_span_id = EXCLUDED.parent_span_id, attempt_seq = EXCLUDED.attempt_seq,
           name = EXCLUDED.name, kind = EXCLUDED.kind, category = EXCLUDED.category,
           tool = EXCLUDED.tool, status_code = EXCLUDED.status_code,
           status_message = EXCLUDED.status_message, service_name = EXCLUDED.service_name,
           start_at = EXCLUDED.start_at, end_at = EXCLUDED.end_at,
           attributes = EXCLUDED.attributes, truncated = EXCLUDED.truncated,
           received_at = now()
     WHERE s.end_at IS DISTINCT FROM EXCLUDED.end_at
    RETURNING s.todo_id
),
bound AS (
    INSERT INTO todo_trace_bindings (todo_id, trace_id)
    SELECT * FROM unnest(%(binding_todos)s::text[], %(binding_traces)s::bytea[])
    ON CONFLICT DO NOTHING
    RETURNING 1
),
dropped AS (
    UPDATE todo_attempts a
       SET spans_dropped = a.spans_dropped + d.n
      FROM unnest(%(drop_todos)s::text[], %(drop_seqs)s::int[], %(drop_counts)s::int[])
           AS d(todo_id, seq, n)
     WHERE a.todo_id = d.todo_id AND a.seq = d.seq
    RETURNING 1
)
SELECT (SELECT count(*) FROM written) AS written,
       (SELECT count(*) FROM bound) AS bound,
       (SELECT count(*) FROM dropped) AS dropped,
       -- One `spans` announcement per todo that had spans written, sent after commit
       -- (switchboard/lib/sql.py, switchboard/lib/changefeed.py; otlp/refresh.py throttles
       -- what the pages re-read). Ids and facts only.
       ARRAY(SELECT json_build_object('kind', 'spans', 'todo_id', t.id,
                                      'endpoint_id', t.endpoint_id,
                                      'queue', t.queue, 'state', t.state)::text
               FROM todos t
              WHERE t.id = ANY(ARRAY(SELECT DISTINCT w.todo_id FROM written w))) AS notified
