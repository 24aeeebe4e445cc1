-- bind: everything the receiver needs to bind one request's spans, in one round trip.
--   'trace'   attempts whose trace_id is one of the request's trace ids (rule 1);
--   'attr'    todos named by a switchboard.todo.id attribute (rule 2);
--   'prior'   todos an earlier request bound one of these traces to by attribute (rule 3);
--   'attempt' the attempts of every todo above, for the choice by interval.
-- `t.endpoint_id = %(endpoint_id)s` in each arm is the whole tenant boundary: a foreign todo
--   id, trace or binding produces no row, exactly like an unknown one.
-- params: endpoint_id (uuid), trace_ids (bytea[]), todo_ids (text[])
-- returns: via, todo_id, seq, trace_id, claimed_at, ended_at
-- Uses index: idx_todo_attempts_trace, todos_pkey, idx_todo_trace_bindings_trace,
--   todo_attempts_pkey.
WITH traced AS (
    SELECT a.todo_id, a.seq, a.trace_id
      FROM todo_attempts a JOIN todos t ON t.id = a.todo_id
     WHERE t.endpoint_id = %(endpoint_id)s AND a.trace_id = ANY(%(trace_ids)s::bytea[])
),
named AS (
    SELECT t.id AS todo_id
      FROM todos t
     WHERE t.endpoint_id = %(endpoint_id)s AND t.id = ANY(%(todo_ids)s::text[])
),
prior AS (
    SELECT s.todo_id, s.trace_id
      FROM todo_trace_bindings s JOIN todos t ON t.id = s.todo_id
     WHERE t.endpoint_id = %(endpoint_id)s AND s.trace_id = ANY(%(trace_ids)s::bytea[])
)
SELECT 'trace' AS via, todo_id, seq, trace_id,
       NULL::timestamptz AS claimed_at, NULL::timestamptz AS ended_at
  FROM traced
UNION ALL
SELECT 'attr', todo_id, NULL, NULL, NULL, NULL FROM named
UNION ALL
SELECT 'prior', todo_id, NULL, trace_id, NULL, NULL FROM prior
UNION ALL
SELECT 'attempt', a.todo_id, a.seq, NULL, a.claimed_at, a.ended_at
  FROM todo_attempts a
 WHERE a.todo_id IN (SELECT todo_id FROM traced
                     UNION SELECT todo_id FROM named
                     UNION SELECT todo_id FROM prior)
