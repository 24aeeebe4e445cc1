-- retry: a human sends a failed, canceled or rejected todo back to pending with a fresh budget
--   (attempt = 0; result and next_retry_at cleared; attempts_total kept, so attempt seqs never
--   repeat). No attempt changes. Rings the doorbell.
-- params: id, and the human scope's parameters
-- returns: the todo; no row on a miss.
-- Uses index: todos_pkey.
WITH cur AS (
    -- The row locked first, so that its state as re-checked is the activity's "from".
    -- Plan rule 1 (todos/sql/README.md).
    SELECT t.id, t.state AS from_state
      FROM todos t
     WHERE t.id = %(id)s
       AND CASE WHEN t.state IN ('failed', 'canceled', 'rejected') AND @{scope}
                THEN true ELSE false END
       AND @{endpoint_live}
       FOR UPDATE
),
upd AS (@{retry_cur})@{activity}
SELECT upd.*, NULL::int AS attempt_seq, @{notify_ready} AS notified FROM upd
