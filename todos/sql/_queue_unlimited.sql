-- queue_unlimited: the queue @{pause_queue} of the endpoint @{pause_endpoint} sets no limit (no
-- settings row, or one whose max_in_flight and claims_per_minute are both unset). The guard of
-- claim_next's fast form (CLAIM_NEXT_UNLIMITED, docs/decisions/0044-claim-unlimited-queue.md),
-- spliced where the full form has @{queue_limits}: one probe before the scan, like the pause's,
-- with nothing locked, counted or written. A queue that sets a limit gives nothing here; the
-- caller then claims it with the full form (todos/lifecycle/agent.py).
-- Uses index: queue_settings_queue_key (endpoint_id, queue).
NOT EXISTS (SELECT 1 FROM queue_settings qs
             WHERE qs.endpoint_id = @{pause_endpoint} AND qs.queue = @{pause_queue}
               AND (qs.max_in_flight IS NOT NULL OR qs.claims_per_minute IS NOT NULL))
