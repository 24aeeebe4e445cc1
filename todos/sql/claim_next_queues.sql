-- claim_next_queues: claim_next on several queues: the first claimable todo across them in claim
--   order (highest priority, then oldest), locked, then everything claim_next does
--   (_claim_tail.sql). One queue goes to claim_next.sql.
-- params: endpoint_id, queues (text[], two or more, distinct), owner, and claim_next's others
-- returns: as claim_next.
-- Uses index: todos_claim_queue_idx (endpoint_id, queue, priority DESC, created_at, id), read
--   in order from the head of each requested queue only; todos_pkey to lock the head chosen
--   (docs/decisions/0013-claim-per-queue.md, docs/decisions/0027-time-and-cancellation.md).
--
-- Claim order is the key (-priority, created_at, id), compared as a row; "before" below means
-- earlier in that order.
--
-- Locking each queue's head as it is read would lock one row per queue and keep the others
-- locked until commit, where a claimer of only that queue would skip them and might find
-- nothing. So `heads` reads up to 8 claimable rows of each queue without locks, `taken` locks the
-- first of them it can (SKIP LOCKED; a row changed since the snapshot is re-checked against the
-- claim predicate), and that is the claim when it comes before every row `heads` left unread
-- (`unread`, `ok`). Only when it does not (8 heads of a queue locked by others at once) does
-- `walk` run: each queue's first lockable row locked as claim_next locks it, the first of those
-- claimed, the others left locked until commit.
--
-- A paused queue (_queue_open.sql) is read as an empty one, in `heads` and in `walk`; `taken`
-- re-checks only the claim predicate: a pause committed meanwhile does not interrupt a claim
-- already choosing, as it interrupts no lease already held. So is a queue at its limits
-- (_queue_limits.sql): its settings row stays locked from `queue_limited` to commit, so no
-- other claim of it can change what `heads` counted.
--
-- Plan rule 4 (todos/sql/README.md): the queue array is read only through sub-selects.
WITH @{queue_limited},
heads AS (
    SELECT q.queue, h.id, h.np, h.created_at
      FROM unnest((SELECT %(queues)s::text[])) AS q(queue)
     CROSS JOIN LATERAL (
        SELECT t.id, -t.priority AS np, t.created_at
          FROM todos t
         WHERE t.endpoint_id = %(endpoint_id)s AND t.queue = q.queue
           AND (t.assignee IS NULL OR t.assignee = %(owner)s)
           AND @{claimable}
           -- A paused queue gives nothing: one probe per queue asked for (_queue_open.sql).
           AND @{queue_open}
           AND @{queue_limits}
         ORDER BY t.priority DESC, t.created_at, t.id
         LIMIT 8
     ) h
),
taken AS (
    SELECT t.id AS cand_id, t.state AS prior_state, t.attempts_total AS prior_total,
           h.np, h.created_at
      -- Sorted first (OFFSET 0 keeps the subquery and its order), so the join probes the
      -- heads' rows in claim order and stops at the first it locks.
      FROM (SELECT id, np, created_at FROM heads ORDER BY np, created_at, id OFFSET 0) h
      JOIN todos t ON t.id = h.id
     -- Plan rule 1 (todos/sql/README.md): todos_pkey is the only way to the head's row.
     WHERE CASE WHEN (t.assignee IS NULL OR t.assignee = %(owner)s) AND @{claimable}
                THEN true ELSE false END
     ORDER BY h.np, h.created_at, h.id
     LIMIT 1
       FOR UPDATE OF t SKIP LOCKED
),
unread AS (
    -- Where the rows `heads` left unread begin: the last head of each queue that gave all 8
    -- (its later rows were not read); no row when `heads` read every claimable row of every
    -- queue. A row `taken` locked at or after one of them may come after an unread row, so it
    -- is claimed only when strictly before all of them.
    SELECT DISTINCT ON (h.queue) h.np, h.created_at, h.id
      FROM heads h
     WHERE h.queue IN (SELECT queue FROM heads GROUP BY queue HAVING count(*) >= 8)
     ORDER BY h.queue, h.np DESC, h.created_at DESC, h.id DESC
),
ok AS (
    SELECT taken.cand_id, taken.prior_state, taken.prior_total
      FROM taken
     WHERE NOT EXISTS (SELECT 1 FROM unread u
                        WHERE (u.np, u.created_at, u.id)
                              <= (taken.np, taken.created_at, taken.cand_id))
),
walk AS (
    SELECT w.cand_id, w.prior_state, w.prior_total
      FROM unnest((SELECT %(queues)s::text[])) AS q(queue)
     CROSS JOIN LATERAL (
        SELECT t.id AS cand_id, t.state AS prior_state, t.attempts_total AS prior_total,
               -t.priority AS np, t.created_at
          FROM todos t
         WHERE t.endpoint_id = %(endpoint_id)s AND t.queue = q.queue
           AND (t.assignee IS NULL OR t.assignee = %(owner)s)
           AND @{claimable}
           -- A paused queue gives nothing: one probe per queue asked for (_queue_open.sql).
           AND @{queue_open}
           AND @{queue_limits}
         ORDER BY t.priority DESC, t.created_at, t.id
         LIMIT 1
           FOR UPDATE SKIP LOCKED
     ) w
     WHERE EXISTS (SELECT 1 FROM unread) AND NOT EXISTS (SELECT 1 FROM ok)
     ORDER BY w.np, w.created_at, w.cand_id
     LIMIT 1
),
cand AS (
    SELECT cand_id, prior_state, prior_total FROM ok
    UNION ALL
    SELECT cand_id, prior_state, prior_total FROM walk
),
@{claim_tail}
