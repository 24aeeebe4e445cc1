-- queue_limited: the settings rows of the queues @{limits_queues} (a text[] expression) of the
-- endpoint @{limits_endpoint} that set a limit, locked FOR UPDATE in queue order, so an agent's
-- claims of a limited queue run one at a time and claims of several queues lock in one order
-- (no deadlock). A queue without a row, or whose row limits nothing, pays one probe and locks
-- nothing (docs/decisions/0028-queue-limits.md).
--
-- The lock alone does not make a count of held todos exact: this statement's snapshot predates
-- the wait for the lock, so a claim that committed meanwhile is invisible to the count, and two
-- claims could both see max_in_flight - 1. The row itself is read as it stands after the wait
-- (READ COMMITTED re-reads a locked row's newest version), and every claim of a limited queue
-- writes the row (_queue_spend.sql). So `current` is true only when the newest version is the
-- one the snapshot sees: no claim of the queue committed since the snapshot, and the count is
-- exact. When it is false the queue gives nothing to this statement; the caller runs the
-- claim again under the lock (todos/lifecycle/agent.py), where the snapshot is taken after it.
-- tokens_now: the rate bucket refilled to now (capacity and refill per minute: the rate).
-- Uses index: queue_settings_queue_key (endpoint_id, queue).
queue_limited AS MATERIALIZED (
    SELECT qs.endpoint_id, qs.queue, qs.max_in_flight, qs.claims_per_minute,
           qs.xmin = (SELECT s.xmin FROM queue_settings s WHERE s.id = qs.id) AS current,
           LEAST(qs.claims_per_minute,
                 qs.tokens + qs.claims_per_minute
                             * extract(epoch FROM now() - qs.refilled_at)::real / 60) AS tokens_now
      FROM queue_settings qs
     WHERE qs.endpoint_id = @{limits_endpoint}
       AND qs.queue = ANY (CAST(@{limits_queues} AS text[]))
       AND (qs.max_in_flight IS NOT NULL OR qs.claims_per_minute IS NOT NULL)
     ORDER BY qs.queue
       FOR UPDATE
)
