-- bulk_cancel_target: what a bulk cancel acts on among the todos a filter selects: the
-- unfinished ones, as a single cancel (_unfinished.sql). The count on the confirm page
-- (todos.queries.bulk_count) and the statement (bulk_cancel.sql) both say it through this.
@{unfinished}
