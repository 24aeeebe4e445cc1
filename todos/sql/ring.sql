-- ring: ring a pending todo, if the shared gate allows: at most one ring per todo per
--   `gate_seconds` across every process, because the gate is the todo's own last_ringed_at.
--   Of several processes ringing at once, one locks the row and rings; the others skip it
--   (SKIP LOCKED) or find the gate closed. A todo locked by a claim in progress is skipped too:
--   the statement never waits. A ring the gate refuses is not lost: the todo became claimable
--   after its last ring (updated_at > last_ringed_at), so ring_due.sql rings it when the gate
--   opens. A todo on a paused queue is not rung (_queue_open.sql): nobody may claim it; the
--   queue's resume wakes its claimers (resume_queue.sql).
-- params: id, gate_seconds, ring_id, reason, ringer, subscribers, activity_cap
-- returns: id, endpoint_id, queue, ring_attempts of the rung todo; no row when not rung.
-- Uses index: todos_pkey; todo_activity_pkey to trim.
WITH cur AS (
    -- Plan rule 1 (todos/sql/README.md).
    SELECT t.id FROM todos t
     WHERE t.id = %(id)s
       AND CASE WHEN t.state = 'pending'
                 AND (t.last_ringed_at IS NULL
                      OR t.last_ringed_at <= now() - make_interval(secs => %(gate_seconds)s))
                 AND @{queue_open}
                 -- Not before it is due (_due_now.sql): the sweeper rings it then.
                 AND @{due_now}
           THEN true ELSE false END
       FOR UPDATE SKIP LOCKED
),
upd AS (
    UPDATE todos t
       SET last_ringed_at = now(), ring_attempts = t.ring_attempts + 1,
           activity_seq = t.activity_seq + 1
      FROM cur
     WHERE t.id = cur.id
    RETURNING t.id, t.endpoint_id, t.queue, t.activity_seq, t.ring_attempts,
              %(ring_id)s::uuid AS ring_id, %(reason)s::text AS reason, %(ringer)s::text AS ringer
),
@{ring_arms}
SELECT upd.id, upd.endpoint_id, upd.queue, upd.ring_attempts, @{notify_rung} AS notified
  FROM upd
