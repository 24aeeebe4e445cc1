-- fence: the open attempt's token digest matches the one presented (seed 000). No token on an
-- unfenced attempt matches; a token on an unfenced attempt, no token on a fenced one and a wrong
-- token do not. Digests are fixed-length, so the comparison leaks nothing through timing.
EXISTS (SELECT 1 FROM todo_attempts fa
         WHERE fa.todo_id = t.id AND fa.ended_at IS NULL
           AND ((fa.lease_token_hash IS NULL AND %(token_hash)s::bytea IS NULL)
                OR fa.lease_token_hash = %(token_hash)s::bytea))
