-- fence: the holder's token digest matches the one presented (docs/decisions/0008-fence-on-attempts-total.md). No token on an
-- unfenced claim matches; a token on an unfenced claim, no token on a fenced one and a wrong
-- token do not. Digests are fixed-length, so the comparison leaks nothing through timing.
-- It reads the todo row's copy of the open attempt's digest (todos/migrations/0003), written by
-- the claim that opened the attempt, so it is checked on the row the statement re-checks after
-- waiting for its lock: a stale holder that waited on a takeover meets the new claim's digest.
-- Statements that close the attempt pair it with _current_attempt.sql.
t.lease_token_hash IS NOT DISTINCT FROM %(token_hash)s::bytea
