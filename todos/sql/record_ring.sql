-- record_ring: a `rung` activity row for a doorbell ring about to go out to `streams` open
--   subscription streams of this process. Best effort: a todo that is no longer pending, or
--   whose row another transaction holds (a claim in progress), gets no row, and the statement
--   never waits (SKIP LOCKED). Past the todo's activity cap, the oldest rung rows go.
-- params: id, streams, activity_cap
-- returns: seq of the row written and the todo's endpoint_id; no row when skipped.
-- Uses index: todos_pkey; todo_activity_pkey to trim.
WITH cur AS (
    -- Plan rule 1 (todos/sql/README.md).
    SELECT t.id, t.endpoint_id FROM todos t
     WHERE t.id = %(id)s AND CASE WHEN t.state = 'pending' THEN true ELSE false END
       FOR UPDATE SKIP LOCKED
),
upd AS (
    UPDATE todos t SET activity_seq = t.activity_seq + 1
      FROM cur
     WHERE t.id = cur.id
    RETURNING t.id, t.activity_seq
),
rung AS (
    INSERT INTO todo_activity (todo_id, seq, kind, actor_kind, actor_ref, detail)
    SELECT upd.id, upd.activity_seq, 'rung', 'system', 'doorbell',
           jsonb_build_object('subscribers', %(streams)s::int)
      FROM upd
    RETURNING seq
),
trimmed AS (
    DELETE FROM todo_activity v
     USING rung
     WHERE v.todo_id = %(id)s AND v.kind = 'rung' AND v.seq <= rung.seq - %(activity_cap)s
)
SELECT rung.seq, cur.endpoint_id FROM rung CROSS JOIN cur
