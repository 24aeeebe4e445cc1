"""What leaves /mcp when something inside goes wrong: JSON-RPC errors, never a 500 or HTML.

Driven in-process with fake ASGI channels, because a live server offers no honest way to make
the SDK answer in plain text or crash.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from django.db import OperationalError

from mcp_server import transport
from mcp_server.transport import ResponseGuard

Message = dict[str, Any]


class Wire:
    """Collects what an app sends; ``response`` reassembles status, headers and JSON body."""

    def __init__(self) -> None:
        self.sent: list[Message] = []

    async def send(self, message: Message) -> None:
        self.sent.append(message)

    def response(self) -> tuple[int, dict[bytes, bytes], Any]:
        [start, *bodies] = self.sent
        assert start["type"] == "http.response.start"
        assert bodies[-1].get("more_body", False) is False
        body = b"".join(b.get("body", b"") for b in bodies)
        return start["status"], dict(start["headers"]), json.loads(body)


def test_a_plain_text_refusal_from_the_sdk_becomes_a_json_rpc_error() -> None:
    wire = Wire()
    guard = ResponseGuard(wire.send, request_id=4)

    async def sdk() -> None:
        await guard.send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [(b"content-type", b"text/plain")],
            }
        )
        await guard.send({"type": "http.response.body", "body": b"Invalid Content-Type header"})
        await guard.finish()

    asyncio.run(sdk())
    status, headers, body = wire.response()
    assert status == 400
    assert headers[b"content-type"] == b"application/json"
    assert body == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {"code": -32600, "message": "Bad Request: Invalid Content-Type header"},
    }


def test_an_empty_406_becomes_a_json_rpc_error() -> None:
    wire = Wire()
    guard = ResponseGuard(wire.send)

    async def sdk() -> None:
        await guard.send({"type": "http.response.start", "status": 406, "headers": []})
        await guard.send({"type": "http.response.body", "body": b"", "more_body": False})

    asyncio.run(sdk())
    status, _, body = wire.response()
    assert status == 406 and body["error"] == {"code": -32600, "message": "Not Acceptable"}


def test_a_500_becomes_an_internal_error_at_200() -> None:
    wire = Wire()
    guard = ResponseGuard(wire.send, request_id="r1")

    async def sdk() -> None:
        await guard.send(
            {
                "type": "http.response.start",
                "status": 500,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await guard.send({"type": "http.response.body", "body": b'{"boom": true}'})

    asyncio.run(sdk())
    status, _, body = wire.response()
    assert status == 200
    assert body == {
        "jsonrpc": "2.0",
        "id": "r1",
        "error": {"code": -32603, "message": "Internal error"},
    }


def test_no_response_at_all_still_gets_one() -> None:
    wire = Wire()
    asyncio.run(ResponseGuard(wire.send).finish())
    status, _, body = wire.response()
    assert status == 200 and body["error"]["code"] == -32603


def _scope(path: str = "/mcp/agent-a") -> Message:
    return {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"authorization", b"Bearer sbk_whatever"),
            (b"content-type", b"application/json"),
        ],
    }


async def _receive() -> Message:
    return {"type": "http.request", "body": b'{"jsonrpc":"2.0","id":1,"method":"ping"}'}


def test_an_exception_inside_becomes_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    async def explode(*_: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(transport, "_serve", explode)
    wire = Wire()
    asyncio.run(transport.application(_scope(), _receive, wire.send))
    status, headers, body = wire.response()
    assert status == 200 and headers[b"content-type"] == b"application/json"
    assert body["error"] == {"code": -32603, "message": "Internal error"}


def test_a_database_outage_while_authenticating_is_503_with_retry_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def down(*_: Any) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(transport, "aresolve_endpoint_bearer", down)
    wire = Wire()
    asyncio.run(transport.application(_scope(), _receive, wire.send))
    status, headers, body = wire.response()
    assert status == 503
    assert headers[b"retry-after"] == b"1"
    assert body["error"]["code"] == -32603
