-- bulk_retry_target: what a bulk retry acts on among the todos a filter selects: dead letters
-- (a retry waiting is not dead yet) whose endpoint is live, as a single retry requires. The
-- count on the confirm page (todos.queries.bulk_count) and the statement (bulk_retry.sql) both
-- say it through this fragment.
@{dead_letter} AND @{endpoint_live}
