-- fence: the open attempt's token digest matches the one presented (seed 000). No token on an
-- unfenced attempt matches; a token on an unfenced attempt, no token on a fenced one and a wrong
-- token do not. Digests are fixed-length, so the comparison leaks nothing through timing.
-- The attempt is found by seq = the re-checked row's attempts_total (see _current_attempt.sql):
-- a stale holder that waited on a takeover's lock cannot match the old attempt's token, because
-- the row now names the new attempt, which its snapshot cannot see.
EXISTS (SELECT 1 FROM todo_attempts fa
         WHERE fa.todo_id = t.id AND fa.seq = t.attempts_total AND fa.ended_at IS NULL
           AND ((fa.lease_token_hash IS NULL AND %(token_hash)s::bytea IS NULL)
                OR fa.lease_token_hash = %(token_hash)s::bytea))
