-- endpoint_live: the todo t's endpoint is not revoked. A revoked endpoint's todos stay where
-- revocation left them: nothing could claim them, so a retry is refused (retry.sql,
-- bulk_retry.sql).
NOT EXISTS (SELECT 1 FROM endpoints e WHERE e.id = t.endpoint_id AND e.revoked_at IS NOT NULL)
