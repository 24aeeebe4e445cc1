"""Raw JSON-RPC to ``/mcp/{slug}``, for what the official client SDK will not send.

The SDK has no runtime for the Tasks or MCP Apps extensions, no 2025-11-25 ``params.task``,
and refuses malformed input; the tests that need those speak the wire here (httpx2, the SDK's
own HTTP client). A 2026-07-28 request carries its era and its client's capabilities in
``params._meta`` and its routing headers (``Mcp-Method``, ``Mcp-Name``); a 2025-11-25 session
is ``initialize`` first, then requests under its session id (``Legacy``).
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

from tests.live import LiveServer

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
TASKS = "io.modelcontextprotocol/tasks"
UI = "io.modelcontextprotocol/ui"
MIME = "text/html;profile=mcp-app"
Json = dict[str, Any]
APP_URI = "ui://switchboard/todo"  # the MCP App's resource
# The clientCapabilities of a client that declares the Tasks extension, or MCP Apps.
TASKS_CLIENT: dict[str, Any] = {"extensions": {TASKS: {}}}
APPS_CLIENT: dict[str, Any] = {"extensions": {UI: {"mimeTypes": [MIME]}}}


def envelope(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """A 2026-07-28 request's ``_meta``: its era and its client's capabilities (none: ``{}``)."""
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }


ENVELOPE = envelope()
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": ENVELOPE}}


def modern_headers(key: str, method: str, name: str | None = None) -> dict[str, str]:
    headers = {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": ACCEPT,
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def legacy_headers(key: str, session: str | None = None) -> dict[str, str]:
    headers = {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": ACCEPT,
        "MCP-Protocol-Version": LEGACY,
    }
    if session is not None:
        headers["Mcp-Session-Id"] = session
    return headers


def tool_call(name: str, arguments: dict[str, Any], *, modern: bool = True) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if modern:
        params["_meta"] = ENVELOPE
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


def post(
    server: LiveServer,
    headers: dict[str, str],
    body: Any,
    slug: str = "agent-a",
) -> httpx2.Response:
    """``body`` (JSON, or bytes as they are) to the server's ``/mcp/{slug}``."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx2.post(server.mcp_url(slug), headers=headers, content=content, timeout=30)


def assert_jsonrpc_error(response: httpx2.Response, status: int, code: int) -> dict[str, Any]:
    """The refusal is ``status`` with a JSON-RPC error ``code`` in a JSON body."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return dict(body)


def initialize(server: LiveServer, key: str, slug: str = "agent-a") -> str:
    """Open a 2025-11-25 session on ``server``; its id."""
    response = post(
        server,
        legacy_headers(key),
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        slug,
    )
    assert response.status_code == 200, response.text
    assert response.json()["result"]["protocolVersion"] == LEGACY
    session = response.headers["mcp-session-id"]
    assert session.startswith("sbs_") and session.isascii() and session.isprintable()
    return session


def modern_post(
    url: str,
    key: str,
    method: str,
    params: dict[str, Any],
    *,
    capabilities: dict[str, Any] | None = None,
    name: str | None = None,
    send_name: bool = True,
) -> httpx2.Response:
    """A 2026-07-28 ``method`` from a client declaring ``capabilities``, answered as it is.

    ``Mcp-Name`` is ``name``, else what the method names (``taskId``, ``name`` or ``uri`` of
    ``params``); ``send_name=False`` leaves it out.
    """
    if name is None:
        named = [params[field] for field in ("taskId", "name", "uri") if field in params]
        name = str(named[0]) if named else None
    headers = modern_headers(key, method, name if send_name else None)
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": method,
        "params": {**params, "_meta": envelope(capabilities)},
    }
    return httpx2.post(url, json=body, headers=headers, timeout=30)


def rpc(url: str, key: str, method: str, params: Json, *, capabilities: Json | None = None) -> Json:
    """A 2026-07-28 ``method`` (as ``modern_post``) that must succeed: its JSON-RPC result."""
    response = modern_post(url, key, method, params, capabilities=capabilities)
    assert response.status_code == 200, response.text
    body = response.json()
    assert "result" in body, body
    return dict(body["result"])


class Legacy:
    """A 2025-11-25 session over raw JSON-RPC: initialize (declaring Tasks), then requests
    with its session id."""

    def __init__(self, url: str, key: str) -> None:
        self.url = url
        self.headers = {"Authorization": f"Bearer {key}", "Accept": ACCEPT}
        response = self.post(
            "initialize",
            {
                "protocolVersion": LEGACY,
                "capabilities": {"tasks": {}},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        self.capabilities = response.json()["result"]["capabilities"]
        self.headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
        self.headers["MCP-Protocol-Version"] = LEGACY

    def post(self, method: str, params: dict[str, Any], timeout: float = 30) -> httpx2.Response:
        body = {"jsonrpc": "2.0", "id": 3, "method": method, "params": params}
        return httpx2.post(self.url, json=body, headers=self.headers, timeout=timeout)

    def result(self, method: str, params: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        response = self.post(method, params, timeout)
        assert response.status_code == 200, response.text
        body = response.json()
        assert "result" in body, body
        return dict(body["result"])
