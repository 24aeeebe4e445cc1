-- bulk_forget: a human forgets the finished todos a Board filter selects, at most `limit` of them
--   (oldest first), each as forget.sql forgets one. Each todo is re-checked under its row lock
--   (FOR UPDATE … SKIP LOCKED: a row locked now is being changed, and is left alone): still in
--   scope, still selected, finished before the count the human confirmed, not yet forgotten.
-- params: seen_at, limit, actor_ref, the scope's, the selection's, the activity arm's
-- returns: id, endpoint_id, state of each todo forgotten; none when nothing matched.
-- Uses index: todos_board_state_idx (endpoint_id, state, …) for a human's endpoints; todos_pkey.
-- @{selection} is the filter's fixed fragment (todos.queries.filter_where).
WITH cur AS (
    SELECT t.id, t.state AS from_state, t.event_id
      FROM todos t
     WHERE @{scope} AND @{selection}
       AND t.finished_at IS NOT NULL AND t.finished_at <= %(seen_at)s AND t.forgotten_at IS NULL
     ORDER BY t.created_at, t.id
     LIMIT %(limit)s
       FOR UPDATE OF t SKIP LOCKED
),
@{forget_arms}@{activity}
SELECT upd.id, upd.endpoint_id, upd.state, @{notify_changed} AS notified FROM upd
