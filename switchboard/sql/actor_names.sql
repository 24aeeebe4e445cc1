-- actor_names: the names behind a page's actors, in one read: the usernames of the humans and
--   the slugs of the endpoints (an endpoint's agent, or its A2A requester) the page names.
-- params: human_ids (bigint[]), endpoint_ids (uuid[]); either may be empty.
-- returns: kind ('human' | 'endpoint'), key (the id as the actor spells it), name. An id with no
--   row (a deleted human or endpoint) returns nothing: switchboard/lib/actors.py says so.
-- Uses index: humans_pkey and endpoints_pkey, one probe per id.
SELECT 'human' AS kind, h.id::text AS key, h.username AS name
  FROM humans h
 WHERE h.id = ANY(%(human_ids)s::bigint[])
UNION ALL
SELECT 'endpoint', e.id::text, e.slug
  FROM endpoints e
 WHERE e.id = ANY(%(endpoint_ids)s::uuid[])
