-- forget: a human erases what their finished todos held and leaves a tombstone
--   (_forget_arms.sql says what goes and what stays); one human_action activity row each.
--   A todo not finished, not in the human's scope, or already forgotten is left alone.
-- params: ids (text[]), actor_ref, the human scope's, the activity arm's
-- returns: id, endpoint_id, state of each todo forgotten; none when nothing matched.
-- Uses index: todos_pkey; todo_attempts_pkey, todo_activity_pkey, todo_search_pkey and
--   events_pkey for the erasures.
WITH cur AS (
    SELECT t.id, t.state AS from_state, t.event_id
      FROM todos t
     WHERE t.id = ANY(%(ids)s::text[]) AND @{scope}
       AND t.finished_at IS NOT NULL AND t.forgotten_at IS NULL
     ORDER BY t.id
       FOR UPDATE OF t
),
@{forget_arms}@{activity}
SELECT upd.id, upd.endpoint_id, upd.state, @{notify_changed} AS notified FROM upd
