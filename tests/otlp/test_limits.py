"""Rate limits (switchboard/lib/limits.py) on /otlp, /mcp and /hooks, and the limiter itself.

The surfaces are tested on daphne processes of their own, started after the test's low limits
are committed (runtime settings, which a server caches for a few seconds): the shared live
server keeps the defaults, so no other test ever meets these limits.
"""

from __future__ import annotations

import asyncio
import json
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from google.rpc.status_pb2 import Status

from switchboard import runtime_settings
from switchboard.lib.limits import Limiter
from tests.base import Personas
from tests.factories import SourceFactory
from tests.live import LiveServer, _start, _stop, _wait_ready
from tests.otlp.helpers import SpanSpec, post, request, trace_id
from todos.intake.routing import sign
from todos.models import Event

LIMITS = {
    "otlp_rate_per_address": 5,
    "otlp_rate_per_endpoint": 3,
    "mcp_rate_per_address": 1000,
    "mcp_rate_per_endpoint": 2,
    "hooks_rate_per_address": 1000,
    "hooks_rate_per_source": 2,
    "hooks_rejected_per_source": 1,
}


def _put_limits(limits: dict[str, int]) -> None:
    for key, value in limits.items():
        runtime_settings.put(key, value)


@pytest.fixture(scope="module")
def limited_env(daphne_env: dict[str, str]) -> dict[str, str]:
    return dict(daphne_env)


def _server(env: dict[str, str], log: Path) -> LiveServer:
    server = _start(env, log)
    try:
        _wait_ready(server)
    except Exception:
        _stop(server)
        raise
    return server


@pytest.fixture
def limited(
    personas: Personas, limited_env: dict[str, str], tmp_path: Path
) -> Iterator[LiveServer]:
    """A fresh server that reads the low limits on its first request."""
    _put_limits(LIMITS)
    server = _server(limited_env, tmp_path / "limited.log")
    yield server
    _stop(server)


def _redis_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=0.5):
            return True
    except OSError:
        return False


pytestmark = pytest.mark.django_db(transaction=True)


def _retry_after(answer: httpx2.Response) -> int:
    value = int(answer.headers["retry-after"])
    assert 1 <= value <= 60
    return value


def test_otlp_is_429_with_retry_after_past_the_endpoints_rate_and_then_the_addresss(
    limited: LiveServer, personas: Personas
) -> None:
    body = request([SpanSpec(trace_id())]).SerializeToString()
    answers = [post(limited, personas.key_a, body) for _ in range(5)]
    # The address budget (5) is spent too: a request without any key is refused before its
    # credentials are looked at.
    anonymous = post(limited, None, body)

    assert [a.status_code for a in answers] == [200, 200, 200, 429, 429]
    _retry_after(answers[3])
    assert "endpoint" in Status.FromString(answers[3].content).message
    assert anonymous.status_code == 429
    assert "address" in Status.FromString(anonymous.content).message
    _retry_after(anonymous)


def test_mcp_answers_a_tool_call_over_the_rate_with_rate_limited_and_anything_else_429(
    limited: LiveServer, personas: Personas
) -> None:
    headers = {
        "Authorization": f"Bearer {personas.key_a}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
    }
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }

    def call(method: str, params: dict[str, object], name: str | None = None) -> httpx2.Response:
        sent = {**headers, "Mcp-Method": method, **({"Mcp-Name": name} if name else {})}
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": method,
            "params": {**params, "_meta": envelope},
        }
        return httpx2.post(limited.mcp_url("agent-a"), headers=sent, json=body, timeout=30)

    list_todos = {"name": "list_todos", "arguments": {}}
    first = call("tools/call", list_todos, "list_todos")
    second = call("tools/call", list_todos, "list_todos")
    third = call("tools/call", list_todos, "list_todos")
    listing = call("tools/list", {})

    assert first.json()["result"]["isError"] is False
    assert second.json()["result"]["isError"] is False
    refused = third.json()["result"]
    assert refused["isError"] is True and "structuredContent" not in refused
    error = json.loads(refused["content"][0]["text"])["error"]
    assert error["code"] == "rate_limited"
    assert "retry after" in error["message"]
    assert listing.status_code == 429
    assert listing.json()["error"]["message"].startswith("Too Many Requests")
    _retry_after(listing)


def test_hooks_are_429_with_retry_after_past_the_sources_rate(
    limited: LiveServer, personas: Personas
) -> None:
    # The source's budget counts deliveries that passed its signature only: posts to a source
    # that does not exist never spend one (tests/intake/test_source_budget.py).
    SourceFactory(owner=personas.alice, slug="open", verify=False)
    url = limited.url("/hooks/open")
    answers = [httpx2.post(url, content=b"{}", timeout=30) for _ in range(3)]
    unknown = [
        httpx2.post(limited.url("/hooks/no-such-source"), content=b"{}", timeout=30)
        for _ in range(3)
    ]

    assert [a.status_code for a in answers] == [202, 202, 429]
    assert answers[2].json()["error"] == "rate_limited"
    _retry_after(answers[2])
    assert [a.status_code for a in unknown] == [404, 404, 404]


def test_a_sources_bad_signatures_past_their_rate_are_429_and_not_stored(
    limited: LiveServer, personas: Personas
) -> None:
    SourceFactory(owner=personas.alice, slug="signed", secret="the-secret")
    url = limited.url("/hooks/signed")
    bad = {"X-Hub-Signature-256": sign("not-the-secret", b"{}")}
    answers = [httpx2.post(url, content=b"{}", headers=bad, timeout=30) for _ in range(2)]

    assert [a.status_code for a in answers] == [401, 429]
    assert answers[1].json()["error"] == "rate_limited"
    assert "bad signature" in answers[1].json()["message"]
    _retry_after(answers[1])
    (event,) = Event.objects.all()
    assert event.disposition == "rejected" and event.payload is None


@pytest.mark.skipif(not _redis_up(), reason="no Redis on 127.0.0.1:6379")
def test_with_redis_two_processes_share_one_budget(
    personas: Personas, limited_env: dict[str, str], tmp_path: Path
) -> None:
    _put_limits({"otlp_rate_per_endpoint": 2, "otlp_rate_per_address": 0})
    env = {**limited_env, "REDIS_URL": "redis://127.0.0.1:6379/0"}
    first = _server(env, tmp_path / "first.log")
    try:
        second = _server(env, tmp_path / "second.log")
        try:
            body = request([SpanSpec(trace_id())]).SerializeToString()
            statuses = [
                post(first, personas.key_a, body).status_code,
                post(second, personas.key_a, body).status_code,
                post(first, personas.key_a, body).status_code,
                post(second, personas.key_a, body).status_code,
            ]
        finally:
            _stop(second)
    finally:
        _stop(first)

    assert statuses == [200, 200, 429, 429]


# --- the limiter alone -------------------------------------------------------------------------


def test_the_limiter_allows_the_rate_then_says_how_long_to_wait() -> None:
    async def scenario() -> list[tuple[bool, int]]:
        limiter = Limiter()
        key = str(uuid.uuid4())
        return [
            (v.allowed, v.retry_after)
            for v in [await limiter.hit("t", "endpoint", key, 3) for _ in range(4)]
        ]

    verdicts = asyncio.run(scenario())

    assert [allowed for allowed, _ in verdicts] == [True, True, True, False]
    assert 1 <= verdicts[3][1] <= 60


def test_budgets_are_separate_per_key_dimension_and_surface() -> None:
    async def scenario() -> list[bool]:
        limiter = Limiter()
        await limiter.hit("otlp", "endpoint", "a", 1)
        return [
            (await limiter.hit("otlp", "endpoint", "a", 1)).allowed,
            (await limiter.hit("otlp", "endpoint", "b", 1)).allowed,
            (await limiter.hit("otlp", "address", "a", 1)).allowed,
            (await limiter.hit("mcp", "endpoint", "a", 1)).allowed,
        ]

    assert asyncio.run(scenario()) == [False, True, True, True]


def test_a_rate_of_zero_is_no_limit() -> None:
    async def scenario() -> bool:
        limiter = Limiter()
        return all([(await limiter.hit("t", "d", "k", 0)).allowed for _ in range(100)])

    assert asyncio.run(scenario())


def test_an_unreachable_store_lets_requests_through() -> None:
    async def scenario() -> bool:
        limiter = Limiter("redis://127.0.0.1:1/0")
        return (await limiter.hit("t", "d", "k", 1)).allowed and (
            await limiter.hit("t", "d", "k", 1)
        ).allowed

    assert asyncio.run(scenario())


def test_the_limits_are_runtime_settings_that_accept_zero() -> None:
    for key in LIMITS:
        assert runtime_settings.validate(key, 0) == 0
