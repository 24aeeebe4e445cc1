-- notify: the change feed's announcement of row upd: a `todo_changed` payload of kind
--   @{notify_kind} ('ready' when the todo became claimable, so the doorbell rings for it;
--   'changed' for anything else a page or a consumer shows). The statement returns it in its
--   `notified` column; the caller announces it once the transaction has committed, from a
--   transaction of its own (switchboard/lib/sql.py, switchboard/lib/changefeed.py,
--   docs/decisions/0033-announce-after-commit.md). Ids and small facts only: never text or
--   payloads.
json_build_object('kind', @{notify_kind}, 'todo_id', upd.id, 'endpoint_id', upd.endpoint_id,
                  'queue', upd.queue, 'state', upd.state)::text
