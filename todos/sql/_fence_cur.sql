-- fence_cur: the fence (_fence.sql) on the open attempt a statement read into its `cur` CTE
-- (heartbeat.sql), instead of a probe of its own.
EXISTS (SELECT 1 FROM cur
         WHERE cur.seq = t.attempts_total
           AND ((cur.lease_token_hash IS NULL AND %(token_hash)s::bytea IS NULL)
                OR cur.lease_token_hash = %(token_hash)s::bytea))
