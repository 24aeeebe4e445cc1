-- todo_search: one page of the todos in a scope that a search (and the other filters) match,
--   in the list's order, after a keyset position: todo_page's answer for a list with a search.
-- params: as todo_page, with q (a todo id) or q_pattern (ILIKE's %text%, escaped).
-- returns: as todo_page.
-- Uses index: todos_pkey for a todo id; otherwise todo_search_text_idx (GIN, pg_trgm) over
--   todo_search.text (todo_search_text(id, title, payload), written once by create.sql), read
--   once for the whole scope: the matches of every owner are found in the index and their text
--   rechecked, their todos read by todos_pkey, and those outside the scope dropped by the join
--   to endpoints (endpoints_pkey). Per endpoint, as todo_page does, would read the index once
--   per endpoint. The matches are sorted and the top `size` kept.
-- @{scope_endpoints}, @{endpoint_filter}, @{todo_filter}, @{order} and @{sort_key}: as todo_page.
SELECT t.id, t.endpoint_id, t.queue, t.title, t.state, t.owner, t.assignee, t.attempt,
       t.max_attempts, t.lease_expires_at, t.claimed_at, t.next_retry_at, t.created_at,
       t.updated_at, t.finished_at, t.attempts_total, t.attempts_pruned, t.priority,
       t.not_before, t.start_by, t.finish_by, t.run_timeout_seconds, t.dedupe_key, t.claimant,
       t.input_tokens, t.output_tokens, t.unpriced_tokens, t.cost_usd,
       @{sort_key} AS sort_key,
       e.slug AS ep_slug, e.name AS ep_name, e.owner_id AS ep_owner_id, e.team_id AS ep_team_id,
       e.revoked_at AS ep_revoked_at
  FROM todos t
  JOIN endpoints e ON e.id = t.endpoint_id
 WHERE @{scope_endpoints} @{endpoint_filter} @{todo_filter}
 ORDER BY @{order}
 LIMIT %(size)s
