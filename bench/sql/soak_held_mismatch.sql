-- soak_held_mismatch: todos whose state and open attempts disagree: a held todo (claimed, or
--   paused for input or authorization) has exactly one open attempt, any other none. One
--   statement sees one snapshot, so a transition half-seen is a real fault, not a race.
-- params: none
-- returns: id, state, open (its open attempts) of each todo that disagrees.
-- Uses index: none: a scan of todos and todo_attempts, a few thousand rows in the soak.
SELECT t.id, t.state, count(a.seq) AS open
  FROM todos t
  LEFT JOIN todo_attempts a ON a.todo_id = t.id AND a.ended_at IS NULL
 GROUP BY t.id, t.state
HAVING (t.state IN ('claimed', 'input-required', 'auth-required')) <> (count(a.seq) = 1)
