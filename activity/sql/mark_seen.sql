-- mark_seen: the human opened the Activity feed; what is older than now is read.
-- params: human_id.
-- returns: activity_seen_at as set; no row for an unknown human.
-- Uses index: humans_pkey.
UPDATE humans SET activity_seen_at = now() WHERE id = %(human_id)s RETURNING activity_seen_at
