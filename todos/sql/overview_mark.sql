-- overview_mark: the current minute, and how far overview_minutes is computed (NULL before the
--   first pass): todos/overview.py starts its pass from there.
-- params: none
-- returns: this_minute, through.
-- Uses index: overview_marks_pkey (one row).
SELECT date_trunc('minute', now()) AS this_minute,
       (SELECT m.through FROM overview_marks m WHERE m.id) AS through
