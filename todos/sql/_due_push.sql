-- due_push: ring_due's every-pass scan for first rings of push endpoints' todos that nobody's MCP
--   stream rang: never rung since they became claimable, of an endpoint with a push URL.
t.last_ringed_at IS NULL
AND t.endpoint_id IN (SELECT e.id FROM endpoints e
                       WHERE e.push_url IS NOT NULL AND e.revoked_at IS NULL)
