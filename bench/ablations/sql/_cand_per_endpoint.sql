-- cand_per_endpoint: claim_next's `cand` before docs/decisions/0013-claim-per-queue.md, for the
-- b-epidx ablation: the endpoint's claimable rows walked oldest first through
-- todos_claimable_idx (endpoint_id, created_at, id), the queue filtered as it goes.
-- Params: endpoint_id, queues (text[]), owner.
cand AS (
    SELECT t.id AS cand_id, t.state AS prior_state, t.attempts_total AS prior_total
      FROM todos t
     WHERE t.endpoint_id = %(endpoint_id)s AND t.queue = ANY(%(queues)s)
       AND (t.assignee IS NULL OR t.assignee = %(owner)s)
       AND @{claimable}
     ORDER BY t.created_at, t.id
     LIMIT 1
       FOR UPDATE SKIP LOCKED
)
