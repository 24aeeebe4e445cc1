-- feed: one page of a human's Activity feed, newest first: the endings of attempts and the
--   activity rows (rings left out) of the todos on the human's endpoints, after a keyset
--   position (at, kind, todo_id, seq).
-- params: scope_human_id, size (the page plus one, to know whether another follows), and as
--   the variant needs them: endpoint (a slug), queue, kind (an activity kind), outcome,
--   after_at + after_kind + after_todo_id + after_seq (the cursor).
-- returns: at, kind ('attempt_end' or the row's kind), todo_id, seq (the attempt's for an
--   ending, the row's for activity), attempt_seq, actor_kind, actor_ref (the actor, or for an
--   ending the lease's owner: an agent's label or an operator's "human:<id>"; activity/feed.py
--   names them in one read for the page), message, truncated, detail, outcome, disposition,
--   claimant, the todo's endpoint_id and endpoint_slug, and its title and queue.
-- Uses index: the human's endpoints read once per arm (_feed_endpoints.sql); then, per
--   endpoint, idx_todo_attempts_feed and idx_todo_activity_feed, each walked newest first from
--   the cursor (its `at` is an index bound) and stopped after `size` rows and their last
--   instant's ties (a Limit over each walk). The arms' rows, at most 2 × endpoints × (`size` +
--   ties), are sorted into the page (a top-N sort): a page reads the human's own rows only,
--   about a page per endpoint, whatever the other owners hold and however long the history,
--   and later pages cost the same. Then todos_pkey for the page's rows only.
-- Each walk stops after `size` rows and the rows tied with its last: any row it leaves out is
-- older than `size` rows of its own walk, so it cannot be on this page (and the next page
-- starts from the cursor, not from the walks' ends).
-- @{arms} is one arm or both joined by UNION ALL; the filters are fixed fragments chosen by
-- which filters are set (activity.feed.statement); values are always parameters.
SELECT f.*, t.title, t.queue
  FROM (
        SELECT *
          FROM (@{arms}) u
         ORDER BY at DESC, kind, todo_id, seq
         LIMIT %(size)s
       ) f
  JOIN todos t ON t.id = f.todo_id
 ORDER BY f.at DESC, f.kind, f.todo_id, f.seq
