-- queue_spend: a claim of a limited queue writes its settings row: spends a rate token (the
-- bucket refilled to now, less one) and, by writing, tells a concurrent claim whose snapshot
-- predates this one that its count is stale (`current` in _queue_limited.sql). Runs only when
-- queue_limited locked a row, so an unlimited queue's claim skips it (a one-time filter).
,
queue_spent AS (
    UPDATE queue_settings qs
       SET tokens = CASE WHEN qs.claims_per_minute IS NULL THEN qs.tokens
                         ELSE GREATEST(0, LEAST(qs.claims_per_minute,
                                                qs.tokens + qs.claims_per_minute
                                                * extract(epoch FROM now() - qs.refilled_at)::real
                                                / 60) - 1) END,
           refilled_at = now()
      FROM upd
     WHERE EXISTS (SELECT 1 FROM queue_limited)
       AND qs.endpoint_id = upd.endpoint_id AND qs.queue = upd.queue
       AND (qs.max_in_flight IS NOT NULL OR qs.claims_per_minute IS NOT NULL)
    RETURNING qs.queue
)
