-- dedupe_hit: the unfinished todo of a live endpoint holding a dedupe key, which create.sql
--   found and did not duplicate. A statement of its own, after create's: its snapshot sees the
--   racing create's row once that committed (create's could not).
-- params: endpoint_id, dedupe_key
-- returns: the todo; no row when it finished meanwhile or the endpoint is revoked.
-- Uses index: todos_dedupe_idx.
SELECT t.*, NULL::int AS attempt_seq
  FROM todos t
 WHERE t.endpoint_id = %(endpoint_id)s AND t.dedupe_key = %(dedupe_key)s
   AND t.finished_at IS NULL
   AND EXISTS (SELECT 1 FROM endpoints e WHERE e.id = t.endpoint_id AND e.revoked_at IS NULL)
