"""What leaves /otlp when the receiver is off or something inside fails: never a 500, never HTML.

Driven in-process with fake ASGI channels (as tests/mcp/test_last_resort.py), because a live
server offers no honest way to make the database fail mid-request.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.db import OperationalError
from django.test import override_settings
from google.rpc.status_pb2 import Status

from otlp import receiver
from switchboard.models import Endpoint

Message = dict[str, Any]


def _scope(path: str = "/otlp/agent-a/v1/traces") -> dict[str, Any]:
    return {
        "type": "http",
        "method": "POST",
        "path": path,
        "client": ("127.0.0.9", 5000),
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/x-protobuf"),
            (b"authorization", b"Bearer sbk_whatever"),
        ],
    }


async def _receive() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


def _answer(scope: dict[str, Any]) -> tuple[int, dict[bytes, bytes], Status]:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(receiver.application(scope, _receive, send))
    start, body = sent
    headers = dict(start["headers"])
    assert headers[b"content-type"] == b"application/x-protobuf"
    return start["status"], headers, Status.FromString(body["body"])


@pytest.fixture(autouse=True)
def _defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    # No database here: the rate limits read their defaults.
    async def defaults() -> Any:
        from switchboard.runtime_settings import RuntimeSettings

        return RuntimeSettings()

    monkeypatch.setattr(receiver.runtime_settings, "acurrent_or_defaults", defaults)


@override_settings(SWITCHBOARD_OTLP=False)
def test_switched_off_the_receiver_answers_404() -> None:
    status, _, body = _answer(_scope())

    assert status == 404 and "not found" in body.message


def test_a_database_outage_while_authenticating_is_503_with_retry_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def down(*_: Any) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(receiver, "aresolve_endpoint_bearer", down)

    status, headers, body = _answer(_scope())

    assert status == 503 and headers[b"retry-after"] == b"5"
    assert body.code == 14  # UNAVAILABLE


@pytest.mark.parametrize("error", [OperationalError("gone"), RuntimeError("a bug")])
def test_a_failure_while_storing_is_503_never_500(
    monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    async def endpoint(*_: Any) -> Endpoint:
        return Endpoint(slug="agent-a")

    async def fail(*_: Any) -> None:
        raise error

    monkeypatch.setattr(receiver, "aresolve_endpoint_bearer", endpoint)
    monkeypatch.setattr(receiver, "_ingest", fail)

    status, headers, _ = _answer(_scope())

    assert status == 503 and b"retry-after" in headers
