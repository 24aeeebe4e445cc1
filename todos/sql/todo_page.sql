-- todo_page: one page of the todos in a scope, in the list's order (newest first unless sorted),
--   after a keyset position. The Board's list reads a human's scope, MCP's list_todos and A2A's
--   ListTasks an endpoint's.
-- params: the scope's (scope_human_id or scope_endpoint_id), size (the page plus one, to know
--   whether another follows), the filters' (todos.queries.TodoFilters.sql_params) as the
--   variant needs them, and after a cursor: after_key (sorted by another column than created),
--   after_created_at, after_id.
-- returns: the list's columns of each todo, its sort key (sort_key, NULL when sorted by
--   created), and its endpoint's as ep_*.
-- Uses index: for a human's endpoints, endpoints_owner_id and endpoints_team_id (the teams read
--   once from team_members_human_team_key, switchboard/scope.py), endpoints_pkey for an
--   endpoint's own scope; then, per endpoint, todos_board_idx (todos_board_state_idx with a state filter) read
--   newest first (oldest first: backwards) and stopped after `size` rows: a page costs about a
--   page per endpoint, however many todos the scope has, and the cursor's row comparison is an
--   index bound, so later pages cost the same. A single ordered scan cannot serve a human: no
--   index is ordered across a human's endpoints. For an endpoint's scope this is that single
--   scan, with one endpoint row in front of it. Sorted by another column, each endpoint's rows
--   that the filters leave are read and the top `size` kept (a top-N sort).
-- @{scope_endpoints}, @{endpoint_filter}, @{todo_filter} (the filters, then the keyset) and
-- @{order}/@{sort_key} are fixed fragments chosen by the scope's side, which filters are set and
-- the sort (todos.queries.page_statement); values are always parameters.
SELECT t.id, t.endpoint_id, t.queue, t.title, t.state, t.owner, t.assignee, t.attempt,
       t.max_attempts, t.lease_expires_at, t.claimed_at, t.next_retry_at, t.created_at,
       t.updated_at, t.finished_at, t.attempts_total, t.attempts_pruned, t.priority,
       t.not_before, t.start_by, t.finish_by, t.run_timeout_seconds, t.dedupe_key, t.claimant,
       t.input_tokens, t.output_tokens, t.unpriced_tokens, t.cost_usd, t.sort_key,
       e.slug AS ep_slug, e.name AS ep_name, e.owner_id AS ep_owner_id, e.team_id AS ep_team_id,
       e.revoked_at AS ep_revoked_at
  FROM endpoints e
 CROSS JOIN LATERAL (
        SELECT t.*, @{sort_key} AS sort_key
          FROM todos t
         WHERE t.endpoint_id = e.id @{todo_filter}
         ORDER BY @{order}
         LIMIT %(size)s
       ) t
 WHERE @{scope_endpoints} @{endpoint_filter}
 ORDER BY @{order}
 LIMIT %(size)s
