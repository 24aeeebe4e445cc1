-- notify_ready: ring the doorbell for row upd; delivered to listeners when the transaction commits.
pg_notify('todo_ready', json_build_object('endpoint_id', upd.endpoint_id, 'queue', upd.queue,
                                          'todo_id', upd.id)::text)
