-- notify_rung: the announcement that row upd (a pending todo) was rung, so every process rings
--   its own open MCP streams for the todo's queue (mcp_server/doorbell.py) and the trail pages
--   show the ring: a `todo_changed` payload the statement returns in its `notified` column,
--   announced after commit as _notify.sql's.
json_build_object('kind', 'rung', 'todo_id', upd.id, 'endpoint_id', upd.endpoint_id,
                  'queue', upd.queue, 'state', 'pending', 'ring_id', upd.ring_id,
                  'reason', upd.reason)::text
