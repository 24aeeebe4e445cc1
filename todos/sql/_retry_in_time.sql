-- retry_in_time: todo t's retry (_retry_backoff.sql) falls due before its finish_by, or it has
--   none: a retry due after it could never be claimed (no claim hands a todo out past its
--   finish_by), so the failure dead-letters at once instead of promising one.
(t.finish_by IS NULL OR @{retry_backoff} < t.finish_by)
