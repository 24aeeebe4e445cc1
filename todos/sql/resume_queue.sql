-- resume_queue: close an endpoint's queue's open pause; its todos are claimable again. Wakes the
--   claimers waiting on the queue: one `rung` announcement for the queue (the doorbell pushes
--   it to every open stream watching it, in every process), not one ring per todo: the queue
--   is read again, whatever it holds. Resuming a queue that is not paused changes nothing.
-- params: endpoint_id, queue, actor_kind, actor_ref, and scope_human_id as pause_queue's
-- returns: one row: found, resumed (a pause was closed now), notified (the announcement, sent
--   after commit; NULL when nothing was resumed).
-- Uses index: endpoints_pkey; queue_pauses_open_idx.
WITH ep AS (
    SELECT e.id FROM endpoints e WHERE e.id = %(endpoint_id)s AND @{owner}
),
upd AS (
    UPDATE queue_pauses qp
       SET resumed_at = now(), resumed_by_kind = %(actor_kind)s, resumed_by = %(actor_ref)s
      FROM ep
     WHERE qp.endpoint_id = ep.id AND qp.queue = %(queue)s AND qp.resumed_at IS NULL
    RETURNING qp.endpoint_id, qp.queue
)
SELECT EXISTS (SELECT 1 FROM ep) AS found, EXISTS (SELECT 1 FROM upd) AS resumed,
       (SELECT json_build_object('kind', 'rung', 'todo_id', '', 'endpoint_id', upd.endpoint_id,
                                 'queue', upd.queue, 'reason', 'resumed')::text
          FROM upd) AS notified
