-- bulk_retry: a human retries the dead letters a Board filter selects, at most `limit` of them
--   (oldest first), each as retry.sql retries one: back to pending with a fresh budget, its
--   activity row (a human_action of the human), no attempt changed.
--   Each todo is re-checked under its row lock (FOR UPDATE … SKIP LOCKED: a row locked now is
--   being changed by someone else and is left alone, never waited for): still in scope, still
--   selected, still a dead letter (_bulk_retry_target.sql), and dead since before the count the
--   human confirmed (updated_at <= seen_at).
--   Rings the doorbell once per queue it refilled (the oldest todo retried on it), not once per
--   todo: a ring tells the queue's claimers to read it again, and ten thousand at commit would
--   each take the doorbell's gate for nothing.
-- params: seen_at, limit, the scope's, the selection's, the activity arm's
-- returns: id, endpoint_id, state of each todo retried; none when nothing matched.
-- Uses index: todos_board_state_idx (endpoint_id, state, …) for a human's endpoints; todos_pkey
--   for the update.
-- @{selection} is the filter's fixed fragment (todos.queries.filter_where).
WITH cur AS (
    SELECT t.id, t.state AS from_state
      FROM todos t
     WHERE @{scope} AND @{selection} AND @{bulk_retry_target}
       AND t.updated_at <= %(seen_at)s
     ORDER BY t.created_at, t.id
     LIMIT %(limit)s
       FOR UPDATE OF t SKIP LOCKED
),
upd AS (@{retry_cur})@{activity}
SELECT upd.id, upd.endpoint_id, upd.state,
       CASE WHEN upd.first_of_queue THEN @{notify_ready} ELSE @{notify_changed} END AS notified
  FROM (SELECT upd.*,
               row_number() OVER (PARTITION BY upd.endpoint_id, upd.queue
                                  ORDER BY upd.created_at, upd.id) = 1 AS first_of_queue
          FROM upd) upd
