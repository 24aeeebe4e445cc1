-- reprice_write: set the recomputed cost of spans (manage.py reprice).
-- params: todo_ids, trace_ids, span_ids, costs (numeric[], NULL: unpriced)
-- returns: the number of spans whose cost changed.
-- Uses index: todo_spans_pkey.
WITH upd AS (
    UPDATE todo_spans s
       SET cost_usd = d.cost
      FROM unnest(%(todo_ids)s::text[], %(trace_ids)s::bytea[], %(span_ids)s::bytea[],
                  %(costs)s::numeric[]) AS d(todo_id, trace_id, span_id, cost)
     WHERE s.todo_id = d.todo_id AND s.trace_id = d.trace_id AND s.span_id = d.span_id
       AND s.cost_usd IS DISTINCT FROM d.cost
    RETURNING 1
)
SELECT count(*) AS changed FROM upd
