-- activity_arm: the transition's activity row, a CTE arm after the others. Its seq is the todo's
--   activity_seq as `upd` left it (@{activity_bump} adds one), so the row lock the transition
--   already holds orders the seqs: no sequence object, no max(seq) scan. Its endpoint_id is the
--   todo's, copied for the Activity feed's walk by endpoint (activity/migrations/0005_endpoint.py).
--   @{activity_attempt} and @{activity_from} are SQL expressions the statement supplies.
-- params: activity_kind, actor_kind, actor_ref, activity_message, activity_truncated,
--   activity_action, activity_detail (a jsonb object merged into the detail)
activity AS (
    INSERT INTO todo_activity (todo_id, endpoint_id, seq, attempt_seq, kind, actor_kind,
                               actor_ref, message, truncated, detail)
    SELECT upd.id, upd.endpoint_id, upd.activity_seq, @{activity_attempt}, %(activity_kind)s, %(actor_kind)s,
           %(actor_ref)s, %(activity_message)s, %(activity_truncated)s,
           jsonb_build_object('action', %(activity_action)s::text, 'from', @{activity_from},
                              'to', upd.state) || %(activity_detail)s::jsonb
      FROM upd
)
