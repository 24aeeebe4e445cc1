"""The MCP conformance suite's fixture tools as a test-only surface over Switchboard's own MCP.

The official suite's Tasks scenarios (``@modelcontextprotocol/conformance``, run by
tests/mcp/test_conformance.py) call fixture tools by name: ``greet`` (sync), ``slow_compute``,
``failing_job``, ``confirm_delete``, ``multi_input``, ``protocol_error_job`` and
``test_tool_with_task`` (task-supporting). Switchboard's only task-creating tool is
``submit_todo``, and the product gains no test tools: this ASGI application, which a test's
live server runs instead of ``switchboard.asgi:application`` (``tests.live``), wraps the
product's and, for requests to ``/conformance/{slug}/{key}`` only:

- adds the bearer ``key`` (the suite sends none) and hands the request to ``/mcp/{slug}``;
- renames a task fixture's ``tools/call`` to ``submit_todo`` on the queue named like the
  fixture, its arguments the todo's payload (``Mcp-Name`` follows when it named the fixture),
  so every task the suite sees is a real todo, answered by the product's task runtime and
  worked by the test's agent over MCP;
- renames ``greet`` to ``list_todos`` (a sync tool; the product checks the envelope and the
  headers) and, when that answered, puts ``Hello, {name}!`` in the result's content: the
  greeting has no work behind it;
- adds the fixtures to ``tools/list``'s answer (``submit_todo``'s definition under each task
  fixture's name, a plain one for ``greet``).

Everything else, and every other path, is the product's untouched.
"""

from __future__ import annotations

import json
from typing import Any

from switchboard.asgi import application as product
from switchboard.lib.asgi import Receive, Scope, Send

PREFIX = "/conformance/"
# The task-supporting fixtures: each becomes a submit_todo on its own queue.
TASK_FIXTURES: dict[str, str] = {
    "slow_compute": "Sleep `seconds` seconds, then answer (a todo the test's agent works).",
    "failing_job": "Fail after about a second (the agent dead-letters the todo).",
    "confirm_delete": "Ask whether to delete `filename`, then complete (the agent asks).",
    "multi_input": "Ask for input, then complete (the agent asks one question at a time).",
    "protocol_error_job": "Fail (Switchboard has no protocol error inside a task).",
    "test_tool_with_task": "Complete with the arguments (no MRTR round before the task).",
}
GREET = "greet"
_GREET_TOOL: dict[str, Any] = {
    "name": GREET,
    "description": "Say hello (sync; answered after the product's list_todos).",
    "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}


async def application(scope: Scope, receive: Receive, send: Send) -> None:
    if scope.get("type") != "http" or not str(scope.get("path", "")).startswith(PREFIX):
        await product(scope, receive, send)
        return
    parts = str(scope["path"])[len(PREFIX) :].strip("/").split("/")
    if len(parts) != 2:
        await _plain(send, 404, b"conformance surface: /conformance/{slug}/{key}")
        return
    slug, key = parts
    body = await _body(receive)
    message = _json(body)
    headers = [
        (name, value)
        for name, value in scope.get("headers", [])
        if name not in (b"authorization", b"content-length")
    ]
    greeting: str | None = None
    listing = isinstance(message, dict) and message.get("method") == "tools/list"
    params = message.get("params") if isinstance(message, dict) else None
    if (
        isinstance(message, dict)
        and message.get("method") == "tools/call"
        and isinstance(params, dict)
    ):
        name = params.get("name")
        arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        renamed = None
        if name in TASK_FIXTURES:
            renamed = "submit_todo"
            label = arguments.get("label") or arguments.get("filename") or name
            params["arguments"] = {"queue": name, "title": f"{name}: {label}", "payload": arguments}
        elif name == GREET:
            renamed = "list_todos"
            greeting = f"Hello, {arguments.get('name')}!"
            params["arguments"] = {"queue": GREET, "limit": 1}
        if renamed is not None:
            params["name"] = renamed
            headers = [
                (n, renamed.encode() if n == b"mcp-name" and v.decode() == name else v)
                for n, v in headers
            ]
            body = json.dumps(message).encode()
    headers += [
        (b"authorization", f"Bearer {key}".encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    path = f"/mcp/{slug}"
    inner = {**scope, "path": path, "raw_path": path.encode(), "headers": headers}
    replay = _replay(body, receive)
    if greeting is None and not listing:
        await product(inner, replay, send)
        return
    status, out_headers, out = await _captured(inner, replay)
    out = _rewrite(
        out, out_headers, lambda result: _greet(result, greeting) if greeting else _list(result)
    )
    out_headers = [(n, v) for n, v in out_headers if n != b"content-length"]
    out_headers.append((b"content-length", str(len(out)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": out_headers})
    await send({"type": "http.response.body", "body": out, "more_body": False})


def _greet(result: dict[str, Any], greeting: str | None) -> dict[str, Any]:
    if result.get("isError"):
        return result
    out = {k: v for k, v in result.items() if k != "structuredContent"}
    out["content"] = [{"type": "text", "text": greeting}]
    return out


def _list(result: dict[str, Any]) -> dict[str, Any]:
    tools = list(result.get("tools") or [])
    base = next((t for t in tools if t.get("name") == "submit_todo"), None)
    if base is None:
        return result
    shared = {k: v for k, v in base.items() if k not in ("_meta", "title", "annotations")}
    for name, description in TASK_FIXTURES.items():
        tools.append({**shared, "name": name, "description": description, "inputSchema": _ANY})
    tools.append(_GREET_TOOL)
    return {**result, "tools": tools}


_ANY: dict[str, Any] = {"type": "object", "additionalProperties": True}


def _rewrite(body: bytes, headers: list[tuple[bytes, bytes]], change: Any) -> bytes:
    """``change`` applied to the JSON-RPC result in a JSON or SSE answer; errors untouched."""
    ctype = dict(headers).get(b"content-type", b"").decode()
    if "text/event-stream" in ctype:
        lines = []
        for line in body.decode().split("\n"):
            if line.startswith("data:"):
                message = _json(line[5:].strip().encode())
                if isinstance(message, dict) and isinstance(message.get("result"), dict):
                    message["result"] = change(message["result"])
                    line = "data: " + json.dumps(message)
            lines.append(line)
        return "\n".join(lines).encode()
    message = _json(body)
    if isinstance(message, dict) and isinstance(message.get("result"), dict):
        message["result"] = change(message["result"])
        return json.dumps(message).encode()
    return body


def _json(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        event = await receive()
        if event["type"] == "http.disconnect":
            break
        chunks.append(event.get("body", b""))
        if not event.get("more_body"):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def again() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return dict(await receive())

    return again


async def _captured(scope: Scope, receive: Receive) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    status = 500
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def keep(event: dict[str, Any]) -> None:
        nonlocal status, headers
        if event["type"] == "http.response.start":
            status, headers = event["status"], list(event.get("headers", []))
        elif event["type"] == "http.response.body":
            chunks.append(event.get("body", b""))

    await product(scope, receive, keep)
    return status, headers, b"".join(chunks)


async def _plain(send: Send, status: int, text: bytes) -> None:
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(text)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": text, "more_body": False})
