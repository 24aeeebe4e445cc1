-- notify_rung: tell every process that row upd was rung, so each rings its own open MCP
--   streams for the todo's queue (mcp_server/doorbell.py); delivered when the transaction commits.
pg_notify('todo_rung', json_build_object('endpoint_id', upd.endpoint_id, 'queue', upd.queue,
                                         'todo_id', upd.id, 'ring_id', upd.ring_id,
                                         'reason', upd.reason)::text)
