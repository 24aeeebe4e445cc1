-- notify_changed: announce that row upd changed what a page or a consumer shows; one
--   `todo_changed` notification, delivered when the transaction commits
--   (switchboard/lib/changefeed.py). Ids and small facts only: never text or payloads.
pg_notify('todo_changed', json_build_object('kind', 'changed', 'todo_id', upd.id,
                                            'endpoint_id', upd.endpoint_id, 'queue', upd.queue,
                                            'state', upd.state)::text)
