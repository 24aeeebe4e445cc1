-- overview_mark_set: record that overview_minutes is computed up to `through` (never backwards:
--   a pass that started earlier and ends later leaves the furthest mark).
-- params: through
-- returns: through (the mark now).
-- Uses index: overview_marks_pkey (one row).
INSERT INTO overview_marks AS m (id, through) VALUES (true, %(through)s)
    ON CONFLICT (id) DO UPDATE SET through = greatest(m.through, EXCLUDED.through)
RETURNING m.through
