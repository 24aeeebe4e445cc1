-- notify_ready: announce that row upd became claimable (the doorbell rings for it; every other
--   consumer re-reads it); one `todo_changed` notification, delivered when the transaction
--   commits (switchboard/lib/changefeed.py). Ids and small facts only: never text or payloads.
pg_notify('todo_changed', json_build_object('kind', 'ready', 'todo_id', upd.id,
                                            'endpoint_id', upd.endpoint_id, 'queue', upd.queue,
                                            'state', upd.state)::text)
