-- notify_rung: tell every process that row upd (a pending todo) was rung, so each rings its own
--   open MCP streams for the todo's queue (mcp_server/doorbell.py) and the trail pages show the
--   ring; one `todo_changed` notification, delivered when the transaction commits.
pg_notify('todo_changed', json_build_object('kind', 'rung', 'todo_id', upd.id,
                                            'endpoint_id', upd.endpoint_id, 'queue', upd.queue,
                                            'state', 'pending', 'ring_id', upd.ring_id,
                                            'reason', upd.reason)::text)
