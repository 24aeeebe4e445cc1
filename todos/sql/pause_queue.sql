-- pause_queue: pause an endpoint's queue: from now on no agent's claim takes its todos and no
--   ring goes out for them (_queue_open.sql). Leases already held run on. Pausing a paused queue
--   changes nothing (the open pause stays the first one).
-- params: endpoint_id, queue, actor_kind, actor_ref, and the owner's scope_human_id when
--   @{owner} checks it (a human's pause: their own endpoints only)
-- returns: one row: found (the endpoint exists, in scope), paused (a pause was opened now).
-- Uses index: endpoints_pkey; queue_pauses_open_idx (the conflict target).
WITH ep AS (
    SELECT e.id FROM endpoints e WHERE e.id = %(endpoint_id)s AND @{owner}
),
ins AS (
    INSERT INTO queue_pauses (endpoint_id, queue, paused_by_kind, paused_by)
    SELECT ep.id, %(queue)s, %(actor_kind)s, %(actor_ref)s FROM ep
    ON CONFLICT (endpoint_id, queue) WHERE resumed_at IS NULL DO NOTHING
    RETURNING id
)
SELECT EXISTS (SELECT 1 FROM ep) AS found, EXISTS (SELECT 1 FROM ins) AS paused
