-- spans_for_todo: the first `per_attempt` spans (in start order) of each of a todo's attempts,
--   and how many each holds, for the trail page's waterfalls in one read. Unscoped: call it
--   only for a todo an owner-scoped read has just returned (activity/trail.py does).
-- params: todo_id, seqs (int[]: the attempts the page shows), per_attempt
-- returns: one row per span (attempt_seq first), each with its attempt's `total`.
-- Uses index: idx_todo_spans_attempt (todo_id, attempt_seq, start_at), read in order per
--   attempt and counted index-only.
SELECT s.*, n.total
  FROM unnest(%(seqs)s::int[]) AS a(seq)
 CROSS JOIN LATERAL (
        SELECT count(*) AS total FROM todo_spans c
         WHERE c.todo_id = %(todo_id)s AND c.attempt_seq = a.seq) n
 CROSS JOIN LATERAL (
        SELECT todo_id, trace_id, span_id, parent_span_id, attempt_seq, name, kind, category,
               tool, status_code, status_message, service_name, start_at, end_at, attributes,
               truncated
          FROM todo_spans t
         WHERE t.todo_id = %(todo_id)s AND t.attempt_seq = a.seq
         ORDER BY t.start_at, t.span_id
         LIMIT %(per_attempt)s) s
 ORDER BY s.attempt_seq, s.start_at, s.span_id
