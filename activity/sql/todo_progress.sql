-- todo_progress: what a todo's holders reported as they went, for the MCP App (get_todo and
--   the switchboard://todos/{id} resource, mcp_server/shapes.py): its newest `notes` progress
--   notes (heartbeat notes), newest first, as parallel arrays, and its stored spans counted,
--   all of them and those whose status is error. Unscoped: activity/trail.py runs it only for
--   a todo an owner-scoped read has just returned.
-- params: todo_id, notes, since (the todo's created_at: its spans were all received after it,
--   so the count probes only the day partitions of todo_spans since then, pruned when the
--   statement starts, not every day kept: docs/decisions/0040-span-partitions.md)
-- returns: one row: note_attempts, note_at, note_texts, note_truncated (arrays, newest first),
--   spans, span_errors.
-- Uses index: todo_activity_pkey (todo_id, seq) read backwards and stopped after `notes`
--   notes, among the todo's activity rows (at most activity_max_per_todo);
--   idx_todo_spans_attempt (todo_id, …) for both counts in one pass over the todo's span rows
--   (at most spans_max_per_todo).
SELECT a.note_attempts, a.note_at, a.note_texts, a.note_truncated, c.spans, c.span_errors
  FROM (SELECT coalesce(array_agg(n.attempt_seq ORDER BY n.seq DESC), '{}') AS note_attempts,
               coalesce(array_agg(n.at ORDER BY n.seq DESC), '{}') AS note_at,
               coalesce(array_agg(n.message ORDER BY n.seq DESC), '{}') AS note_texts,
               coalesce(array_agg(n.truncated ORDER BY n.seq DESC), '{}') AS note_truncated
          FROM (SELECT v.seq, v.attempt_seq, v.at, v.message, v.truncated
                  FROM todo_activity v
                 WHERE v.todo_id = %(todo_id)s AND v.kind = 'note'
                 ORDER BY v.seq DESC
                 LIMIT %(notes)s) n) a
 CROSS JOIN (SELECT count(*) AS spans,
                    count(*) FILTER (WHERE s.status_code = 'error') AS span_errors
               FROM todo_spans s
              WHERE s.todo_id = %(todo_id)s
                AND s.received_at >= %(since)s::timestamptz) c
