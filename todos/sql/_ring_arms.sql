-- ring_arms: what every ring writes beside the todo (`upd`: id, endpoint_id, queue, activity_seq,
--   ring_id, reason): its `rung` activity row, a queued push when the endpoint has a push URL
--   (sent after commit by the sweeper, todos/push.py), and the trim of the todo's old rung rows
--   past the activity cap.
-- params: subscribers (NULL when the ringer has no count of its own), activity_cap
rung AS (
    INSERT INTO todo_activity (todo_id, endpoint_id, seq, kind, actor_kind, actor_ref, detail)
    SELECT upd.id, upd.endpoint_id, upd.activity_seq, 'rung', 'system', upd.ringer,
           jsonb_strip_nulls(jsonb_build_object('ring_id', upd.ring_id, 'reason', upd.reason,
                                                'subscribers', %(subscribers)s::int))
      FROM upd
    RETURNING todo_id, seq
),
pushed AS (
    INSERT INTO push_attempts (endpoint_id, todo_id, ring_id, queue, reason)
    SELECT upd.endpoint_id, upd.id, upd.ring_id, upd.queue, upd.reason
      FROM upd JOIN endpoints e ON e.id = upd.endpoint_id
     WHERE e.push_url IS NOT NULL AND e.revoked_at IS NULL
),
trimmed AS (
    DELETE FROM todo_activity v
     USING rung
     WHERE v.todo_id = rung.todo_id AND v.kind = 'rung' AND v.seq <= rung.seq - %(activity_cap)s
)
