-- _feed_owned: the condition that keeps an arm's row (its todo @{todo} ) to the human's todos
--   and to the filters on the todo and its endpoint.
-- A correlated probe, one todos_pkey lookup per row the arm walks, against the human's
-- endpoints read once (an InitPlan). OFFSET 0 keeps the probe a probe: without it PostgreSQL
-- turns the EXISTS into a join and may start from the human's todos, reading and sorting
-- every row of theirs to find the newest (todos/sql/README.md, plan rule 3, for the same
-- device). @{endpoint_filter} and @{todo_filter} are fixed fragments.
EXISTS (SELECT 1
          FROM todos t
         WHERE t.id = @{todo}
           AND t.endpoint_id = ANY (ARRAY(SELECT e.id FROM endpoints e
                                           WHERE @{human_endpoints} @{endpoint_filter}))
           @{todo_filter}
        OFFSET 0)
