-- bulk_forget_target: what a bulk forget acts on: a finished todo not yet forgotten
--   (bulk_count.sql counts these; bulk_forget.sql selects the same).
(t.finished_at IS NOT NULL AND t.forgotten_at IS NULL)
