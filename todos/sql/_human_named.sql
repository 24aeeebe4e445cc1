-- _human_named: the human an actor reference names ("human:<id>", as operator claims and Board
--   actions record their actor), as a LATERAL subquery: one row with its username, or none
--   when the reference names no human (an agent's owner string, a deleted human).
-- @{ref} is the column holding the reference. The CASE keeps the cast from ever seeing a
-- reference that is not a number; a reference too long for bigint is not one.
-- Uses index: humans_pkey.
SELECT h.username
  FROM humans h
 WHERE h.id = CASE WHEN @{ref} ~ '^human:[1-9][0-9]{0,17}$' THEN substr(@{ref}, 7)::bigint END
