-- bulk_count: how many todos a bulk action would act on now, counted up to `limit` (the cap
--   plus one, so the page can say "more than the cap"), and the database's time of the count,
--   which the action's statement is given back so that it acts on nothing that joined the
--   selection after the count (bulk_retry.sql, bulk_cancel.sql).
-- params: the scope's, the selection's (todos.queries.filter_where), limit
-- returns: one row: n, seen_at.
-- Uses index: todos_board_state_idx (endpoint_id, state, …) for a human's endpoints.
-- @{selection} is the filter's fixed fragment, @{target} the action's (_bulk_*_target.sql).
SELECT count(*) AS n, now() AS seen_at
  FROM (SELECT 1 FROM todos t
         WHERE @{scope} AND @{selection} AND @{target}
         LIMIT %(limit)s) s
