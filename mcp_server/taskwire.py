"""The wire side of MCP Tasks: what ``mcp_server.transport`` hands over before the SDK.

Two kinds of request are answered here (``mcp_server.tasks`` has the reads and the writes):

- the ``tasks/*`` methods of either era, which the SDK's method tables do not route;
- a ``tools/call`` that creates a task: ``submit_todo`` from a 2026-07-28 client that declared
  the extension (answered ``resultType: "task"``), or any tool with ``params.task`` from a
  2025-11-25 client (``CreateTaskResult`` for ``submit_todo``; -32601 for a tool that does not
  run as a task, or an endpoint without ``submit``, before anything is created).

Everything else returns False with nothing sent. Errors are JSON-RPC errors: in the modern era
at the HTTP status the SDK's table gives their code (400 for -32602 and -32021, 404 for
-32601), in the legacy era at 200, as the SDK answers there. Nothing here is a 5xx: a database
failure is the internal error at 200, as the rest of the transport answers it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import mcp_types as types
from django.db import DatabaseError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundModernRoute,
    classify_inbound_request,
    decode_header_value,
)

from mcp_server import registry, tasks, verbs
from mcp_server import server as mcp
from switchboard.lib import asgi, dbthread, todowatch
from switchboard.lib.asgi import Receive, Scope, Send
from switchboard.models import Endpoint

logger = logging.getLogger(__name__)

# tasks/result waits this long between re-reads even when the change feed says nothing (it
# re-reads at once on every change of the todo).
RESULT_RECHECK_SECONDS = 30.0
_ROUTING = (MCP_PROTOCOL_VERSION_HEADER, MCP_METHOD_HEADER, MCP_NAME_HEADER)


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data, "more_body": False})


async def _error(
    send: Send, request_id: Any, error: tasks.TaskError, *, modern: bool, status: int | None = None
) -> None:
    body: dict[str, Any] = {"code": error.code, "message": str(error)}
    if error.data is not None:
        body["data"] = error.data
    if status is None:
        status = ERROR_CODE_HTTP_STATUS.get(error.code, 200) if modern else 200
    await _send_json(send, status, {"jsonrpc": "2.0", "id": request_id, "error": body})


async def _result(send: Send, request_id: Any, result: dict[str, Any], *, modern: bool) -> None:
    if modern:
        result = {**result, "_meta": {**result.get("_meta", {}), **_server_info()}}
        result.setdefault("resultType", "complete")
    await _send_json(send, 200, {"jsonrpc": "2.0", "id": request_id, "result": result})


def _server_info() -> dict[str, Any]:
    return {types.SERVER_INFO_META_KEY: mcp.SERVER.server_info_stamp}


def _headers(scope: Scope) -> dict[str, str]:
    return {name: value for name in _ROUTING if (value := asgi.header(scope, name.encode()))}


def _route(scope: Scope, message: dict[str, Any]) -> InboundModernRoute | tasks.TaskError:
    """The SDK's modern ladder (``_meta``, routing headers, version), plus the extension's rule
    that ``Mcp-Name`` carries ``params.taskId`` on tasks/* (its "Streamable HTTP: Routing
    Headers": the client MUST send it; a missing or different one is -32020, as the transport
    answers a missing ``Mcp-Name`` on tools/call)."""
    headers = _headers(scope)
    route = classify_inbound_request(message, headers=headers)
    if not isinstance(route, InboundModernRoute):
        return tasks.TaskError(route.code, route.message, route.data)
    params = message.get("params") or {}
    name = decode_header_value(headers.get(MCP_NAME_HEADER))
    task_id = params.get("taskId")
    is_task_method = str(message.get("method", "")).startswith("tasks/")
    if is_task_method and (name is not None or task_id is not None) and name != task_id:
        return tasks.TaskError(
            types.HEADER_MISMATCH,
            f"{MCP_NAME_HEADER} header does not match the request body's 'taskId' parameter"
            if name is not None
            else f"{MCP_NAME_HEADER} header is missing: tasks/* carry the 'taskId' in it",
        )
    return route


async def answer(
    scope: Scope,
    receive: Receive,
    message: dict[str, Any],
    *,
    endpoint: Endpoint,
    modern: bool,
    session: str | None,
    key_digest: bytes | None,
    retry_after: int | None,
    send: Send,
) -> bool:
    """Answer ``message`` when it is a task request; False, with nothing sent, otherwise."""
    method = message.get("method")
    params = message.get("params")
    if "id" not in message or not isinstance(method, str):
        return False
    if not isinstance(params, dict):
        params = {}
    if method.startswith("tasks/"):
        await _task_method(
            scope, receive, message, method, params, endpoint, modern, key_digest, send
        )
        return True
    if method != "tools/call":
        return False
    if modern:
        if params.get("name") != "submit_todo":
            return False
        route = _route(scope, message)
        if not isinstance(route, InboundModernRoute):
            return False  # the SDK words the refusal
        if not tasks.extension_declared(route.client_capabilities):
            return False  # a plain submit_todo: the SDK (or the fast path) answers it
        await _create(message, params, endpoint, session, key_digest, retry_after, None, send, True)
        return True
    if "task" not in params:
        return False
    task = params.get("task")
    name = params.get("name")
    if not isinstance(task, dict) or name != "submit_todo" or not verbs.can_submit(endpoint):
        # The tool does not run as a task for this endpoint (2025-11-25: taskSupport forbidden
        # answers -32601); nothing is created.
        await _error(
            send,
            message["id"],
            tasks.TaskError(
                types.METHOD_NOT_FOUND, f"tool {name!r} does not support task-augmented calls"
            ),
            modern=False,
        )
        return True
    ttl = task.get("ttl")
    ttl_ms = ttl if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0 else None
    await _create(message, params, endpoint, session, key_digest, retry_after, ttl_ms, send, False)
    return True


async def _create(
    message: dict[str, Any],
    params: dict[str, Any],
    endpoint: Endpoint,
    session: str | None,
    key_digest: bytes | None,
    retry_after: int | None,
    ttl_ms: int | None,
    send: Send,
    modern: bool,
) -> None:
    """Run ``submit_todo`` (the same checks and mapping as every tool call); a success is the
    new task, a tool error the tool's own result (no task was created)."""
    arguments = params.get("arguments")
    caller = mcp.caller_of(endpoint, session, params, retry_after, key_digest, ttl_ms)
    try:
        out, is_error = await mcp.answer_call(
            caller, "submit_todo", arguments if isinstance(arguments, dict) else {}
        )
    except Exception:
        logger.exception("submit_todo as a task failed")
        await _error(
            send,
            message["id"],
            tasks.TaskError(types.INTERNAL_ERROR, "Internal error"),
            modern=modern,
            status=200,
        )
        return
    if is_error:
        result: dict[str, Any] = {
            "content": [{"type": "text", "text": mcp.compact_json(out)}],
            "isError": True,
        }
        await _result(send, message["id"], result, modern=modern)
        return
    todo_id = out["todo"]["id"]
    try:
        view = await dbthread.run(tasks.read, endpoint, todo_id)
    except (tasks.TaskError, DatabaseError):
        logger.exception("submit_todo: the new task %s could not be read", todo_id)
        await _error(
            send,
            message["id"],
            tasks.TaskError(types.INTERNAL_ERROR, "Internal error"),
            modern=modern,
            status=200,
        )
        return
    if modern:
        await _result(
            send, message["id"], {**tasks.modern_task(view), "resultType": "task"}, modern=True
        )
    else:
        await _result(send, message["id"], {"task": tasks.legacy_task(view)}, modern=False)


async def _task_method(
    scope: Scope,
    receive: Receive,
    message: dict[str, Any],
    method: str,
    params: dict[str, Any],
    endpoint: Endpoint,
    modern: bool,
    key_digest: bytes | None,
    send: Send,
) -> None:
    request_id = message["id"]
    served = tasks.MODERN_METHODS if modern else tasks.LEGACY_METHODS
    if method not in served:
        error = tasks.TaskError(types.METHOD_NOT_FOUND, f"Method not found: {method}")
        await _error(send, request_id, error, modern=modern)
        return
    if modern:
        route = _route(scope, message)
        if isinstance(route, tasks.TaskError):
            await _error(send, request_id, route, modern=True)
            return
        if not tasks.extension_declared(route.client_capabilities):
            await _error(send, request_id, tasks.missing_capability(), modern=True)
            return
    if not verbs.can_submit(endpoint):
        # The handshake declares tasks for every endpoint (capabilities are the server's); one
        # that cannot submit has no task: an empty list, and any task id is unknown, as another
        # endpoint's is.
        if method == "tasks/list":
            await _result(send, request_id, {"tasks": []}, modern=modern)
        else:
            await _error(send, request_id, tasks.not_found(), modern=modern)
        return
    try:
        if method == "tasks/get":
            result = await dbthread.run(tasks.get, endpoint, params, modern)
        elif method == "tasks/update":
            result = await dbthread.run(tasks.update, endpoint, params)
        elif method == "tasks/cancel":
            result = await dbthread.run(tasks.cancel, endpoint, params, modern)
        elif method == "tasks/list":
            if key_digest is None:
                raise tasks.TaskError(types.INVALID_REQUEST, "tasks/list needs a bearer key")
            result = await dbthread.run(tasks.list_page, endpoint, key_digest, params)
        else:  # tasks/result
            waited = await _wait_for_result(receive, endpoint, tasks.task_id_of(params))
            if waited is None:
                return  # the client went away
            result = waited
    except tasks.TaskError as refused:
        await _error(send, request_id, refused, modern=modern)
        return
    except DatabaseError:
        logger.exception("%s: database error", method)
        unavailable = tasks.TaskError(types.INTERNAL_ERROR, "the database is unavailable")
        await _error(send, request_id, unavailable, modern=modern, status=200)
        return
    await _result(send, request_id, result, modern=modern)


async def _wait_for_result(
    receive: Receive, endpoint: Endpoint, todo_id: str
) -> dict[str, Any] | None:
    """``tasks/result``: the tool's result once the task is finished, woken by every change of
    its todo (``switchboard.lib.todowatch``); None when the client disconnects first."""
    disconnected = asyncio.Event()

    async def watch_disconnect() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        disconnected.set()

    loop = asyncio.get_running_loop()
    watcher = loop.create_task(watch_disconnect())
    try:
        with todowatch.following(todo_id) as changed:
            while True:
                result = await dbthread.run(tasks.result_if_finished, endpoint, todo_id)
                if result is not None:
                    return result
                woken = loop.create_task(todowatch.changed(changed, RESULT_RECHECK_SECONDS))
                gone = loop.create_task(disconnected.wait())
                _, pending = await asyncio.wait({woken, gone}, return_when=asyncio.FIRST_COMPLETED)
                for task in pending:
                    task.cancel()
                if disconnected.is_set():
                    return None
    finally:
        watcher.cancel()


class LegacyFollower:
    """``notifications/tasks/status`` for a 2025-11-25 session's GET stream: the tasks the
    session's key submitted that are not finished, each pushed when its status or message
    changes (its finish included). The set is re-read at every wake of the stream, so a task
    submitted after the stream opened is followed from the next wake (a change of a followed
    task, a ring, or the 15-second keep-alive)."""

    def __init__(self, endpoint: Endpoint, key_digest: bytes) -> None:
        self.endpoint = endpoint
        self.key_digest = key_digest
        self.last: dict[str, tuple[Any, ...]] = {}

    def step(self) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
        """(the ids to follow, the notifications owed): sync, for a worker thread."""
        ids = list(
            dict.fromkeys([*registry.open_tasks(self.endpoint.id, self.key_digest), *self.last])
        )
        owed = []
        for todo_id in ids:
            view = tasks.read_or_none(self.endpoint, todo_id)
            if view is None:
                self.last.pop(todo_id, None)
                continue
            pushed = tasks.notification(view, modern=False)
            seen = (pushed["params"]["status"], pushed["params"].get("statusMessage"))
            if self.last.get(todo_id) != seen:
                owed.append(pushed)
            if view.row.terminal:
                self.last.pop(todo_id, None)
            else:
                self.last[todo_id] = seen
        return tuple(self.last), owed
