-- unheld: SET items that end the holder's lease on a todo row: no owner, no lease, and the copies
-- of the held attempt's fence digest and heartbeat write time cleared with them (the CHECK
-- todos_lease_copy_held refuses them on a todo nobody holds).
owner = NULL, lease_expires_at = NULL, lease_token_hash = NULL, attempt_heartbeat_at = NULL
