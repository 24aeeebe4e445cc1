"""The fast path (``mcp_server.fastpath``) answers a stateless ``tools/call`` exactly as the SDK.

Each case runs twice from the same database state (emptied between the runs, then set up the
same way): once as the product runs, once with ``SWITCHBOARD_MCP_FAST_PATH`` off, when every
request goes through the SDK's pipeline. Both go through ``mcp_server.transport.application``
in this process, and what is compared is what daphne turns into bytes: the status, the header
list and the body, after masking what two runs differ in by construction (todo ids, timestamps,
minted traceparents and lease tokens). Each case also says which path must answer it, so a
fast path that quietly stopped answering (or answered what it should leave to the SDK) fails
here too. Over HTTP, the SDK client tests (test_tools.py and the rest) run on the fast path.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings

from mcp_server import fastpath, transport
from mcp_server import server as mcp
from mcp_server.verbs import owner_of
from switchboard.credentials import mint_key
from switchboard.lib import dbthread, frontdoor
from switchboard.lib.frontdoor import Door
from switchboard.models import Endpoint, Verb
from tests.base import Personas
from tests.factories import EndpointFactory
from tests.reach import claimed, new_todo
from todos.models import Todo

pytestmark = pytest.mark.django_db(transaction=True)

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
QUEUE = "q"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "fastpath-test", "version": "1.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
FAST, SDK = "fast", "sdk"

Setup = Callable[[Endpoint], dict[str, Any]]


def _pending(endpoint: Endpoint) -> str:
    return new_todo(endpoint.id, QUEUE, title="pending — é", payload={"n": 1, "ß": "✓"}).id


def _held(endpoint: Endpoint, *, fence: bool = False) -> tuple[str, str | None]:
    claim = claimed(
        endpoint.id, QUEUE, owner=owner_of(endpoint), claimant="c/1", require_fence=fence
    )
    return claim.todo.id, claim.lease_token


def _held_id(endpoint: Endpoint) -> dict[str, Any]:
    return {"id": _held(endpoint)[0]}


def _with_fence(endpoint: Endpoint) -> dict[str, Any]:
    todo_id, token = _held(endpoint, fence=True)
    return {"id": todo_id, "lease_token": token, "summary": "done", "result": {"ok": True}}


@dataclass(frozen=True)
class Case:
    tool: str
    setup: Setup = field(default=lambda endpoint: {})
    arguments: dict[str, Any] = field(default_factory=dict)
    path: str = FAST
    # Changes to the request: headers (None removes one), _meta, the message itself.
    headers: dict[str, str | None] = field(default_factory=dict)
    extra_headers: list[tuple[str, str]] = field(default_factory=list)
    meta: dict[str, Any] | None = None
    message: dict[str, Any] = field(default_factory=dict)
    verbs: tuple[str, ...] | None = None


CASES: dict[str, Case] = {
    # Every tool's success.
    "list_todos": Case("list_todos", lambda e: (_pending(e), {"queue": QUEUE})[1]),
    "get_todo": Case("get_todo", lambda e: {"id": _pending(e)}),
    "claim_next": Case(
        "claim_next",
        lambda e: (_pending(e), {"queue": QUEUE, "claimant": "runner/é", "lease_ttl_seconds": 90})[
            1
        ],
    ),
    "claim_next empty": Case("claim_next", arguments={"queue": "nothing-here"}),
    "claim with a fence": Case("claim", lambda e: {"id": _pending(e), "require_fence": True}),
    "heartbeat": Case("heartbeat", _held_id, {"lease_ttl_seconds": 120, "note": "half way"}),
    "complete": Case("complete", _held_id, {"summary": "ok, ünïcode ✓", "result": {"a": [1]}}),
    "complete with a fence": Case("complete", _with_fence),
    "fail": Case("fail", _held_id, {"summary": "red", "result": {"exit": 1}}),
    "release": Case("release", _held_id),
    "request_input": Case("request_input", _held_id, {"question": "which branch?"}),
    "reject": Case("reject", _held_id, {"summary": "not mine"}),
    "submit_todo": Case(
        "submit_todo", arguments={"queue": QUEUE, "title": "t", "payload": {"a": 1}, "priority": 2}
    ),
    "cancel_todo (the App's)": Case("cancel_todo", lambda e: {"id": _pending(e)}),
    "a traceparent in _meta": Case(
        "claim_next",
        lambda e: (_pending(e), {"queue": QUEUE})[1],
        meta={**META, "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
    ),
    "a progress token in _meta": Case(
        "list_todos", arguments={"queue": QUEUE}, meta={**META, "progressToken": "p-1"}
    ),
    "no clientInfo": Case(
        "list_todos",
        meta={k: v for k, v in META.items() if k != "io.modelcontextprotocol/clientInfo"},
    ),
    "a string id": Case("list_todos", message={"id": "req-7"}),
    "no arguments at all": Case(
        "list_todos", message={"params": {"name": "list_todos", "_meta": META}}
    ),
    # Tool errors: bad arguments, a lifecycle conflict, not found, a verb outside the scope.
    "wrong type": Case("claim_next", arguments={"queue": 5}),
    "missing required": Case("complete", arguments={"summary": "no id"}),
    "unknown argument": Case("get_todo", lambda e: {"id": _pending(e), "colour": "red"}),
    "out of bounds": Case("claim_next", arguments={"queue": QUEUE, "lease_ttl_seconds": 1}),
    "unstorable": Case("complete", _held_id, {"summary": "nul \u0000 here"}),
    "a lone surrogate": Case("list_todos", arguments={"state": "a\ud800b"}),
    "malformed traceparent": Case(
        "claim_next", lambda e: (_pending(e), {"queue": QUEUE, "traceparent": "nope"})[1]
    ),
    "conflict: complete a pending todo": Case("complete", lambda e: {"id": _pending(e)}),
    "conflict: a stale lease token": Case(
        "complete", lambda e: {**_with_fence(e), "lease_token": "A" * 22}
    ),
    "not found": Case("get_todo", arguments={"id": "td_aaaaaaaaaaaaaaaaaaaa"}),
    "forbidden verb": Case(
        "claim_next", arguments={"queue": QUEUE}, verbs=(Verb.LIST_TODOS, Verb.GET_TODO)
    ),
    # What the fast path leaves to the SDK: its answers must not change either.
    "unknown tool": Case("nope", path=SDK),
    "arguments not an object": Case(
        "list_todos",
        message={"params": {"name": "list_todos", "arguments": [1], "_meta": META}},
        path=SDK,
    ),
    "name not a string": Case(
        "list_todos", message={"params": {"name": 5, "_meta": META}}, path=SDK
    ),
    "Accept without JSON": Case("list_todos", headers={"accept": "text/event-stream"}, path=SDK),
    "Accept wildcard": Case("list_todos", headers={"accept": "*/*"}),
    "no Accept": Case("list_todos", headers={"accept": None}, path=SDK),
    "Mcp-Name contradicts": Case("list_todos", headers={"mcp-name": "get_todo"}, path=SDK),
    "Mcp-Method missing": Case("list_todos", headers={"mcp-method": None}, path=SDK),
    "Mcp-Name twice": Case("list_todos", extra_headers=[("mcp-name", "list_todos")], path=SDK),
    "envelope without capabilities": Case(
        "list_todos",
        meta={k: v for k, v in META.items() if k != "io.modelcontextprotocol/clientCapabilities"},
        path=SDK,
    ),
    "envelope version not the header's": Case(
        "list_todos",
        meta={**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"},
        path=SDK,
    ),
    "clientInfo of the wrong shape": Case(
        "list_todos", meta={**META, "io.modelcontextprotocol/clientInfo": 5}, path=SDK
    ),
    "a notification": Case("list_todos", message={"id": None}, path=SDK),
    "another method": Case("list_todos", message={"method": "tools/list"}, path=SDK),
}


# --- masking -----------------------------------------------------------------------------------

_MASKS = [
    (re.compile(r"td_[a-z2-7]{20}"), "td_ID"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"), "TIME"),
    (re.compile(r"00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}"), "TRACEPARENT"),
    (re.compile(r'(lease_token\\?":\\?")[A-Za-z0-9_-]+'), r"\1TOKEN"),
    # request_input's question key (random, for MCP Tasks' inputRequests).
    (re.compile(r'(\\?"key\\?":\\?")[0-9a-f]{16}'), r"\1KEY"),
]


def masked(body: bytes) -> str:
    text = body.decode()
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text


# --- one request through the transport ---------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    path: str


def _request(case: Case, key: str, arguments: dict[str, Any]) -> tuple[bytes, list[Any]]:
    params: dict[str, Any] = {"name": case.tool, "arguments": arguments, "_meta": case.meta or META}
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": params}
    for name, value in case.message.items():
        if value is None:
            message.pop(name)
        else:
            message[name] = value
    headers: dict[str, str | None] = {
        "host": "127.0.0.1",
        "authorization": f"Bearer {key}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": case.tool,
        **case.headers,
    }
    raw = [(k.encode(), v.encode()) for k, v in headers.items() if v is not None]
    raw += [(k.encode(), v.encode()) for k, v in case.extra_headers]
    return json.dumps(message).encode(), raw


async def _send(body: bytes, headers: list[Any]) -> Answer:
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp/fast",
        "headers": headers,
        "client": ("127.0.0.1", 40000),
        "scheme": "http",
        "query_string": b"",
    }
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # never disconnects
        raise AssertionError("unreachable")

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await transport.application(scope, receive, send)
    start, *rest = sent
    assert start["type"] == "http.response.start"
    assert all(m["type"] == "http.response.body" for m in rest)
    assert not rest[-1].get("more_body", False)
    return Answer(
        status=start["status"],
        headers=[(bytes(k), bytes(v)) for k, v in start["headers"]],
        body=b"".join(m.get("body", b"") for m in rest),
        path="",
    )


@pytest.fixture
def answered_by(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What ``fastpath.answer`` said for each request: True when it answered."""
    said: list[bool] = []
    real = fastpath.answer

    async def spy(*args: Any, **kwargs: Any) -> bool:
        said.append(await real(*args, **kwargs))
        return said[-1]

    monkeypatch.setattr(fastpath, "answer", spy)
    return said


def _empty_the_queue() -> None:
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE todos, todo_attempts CASCADE")


def _run(case: Case, endpoint: Endpoint, key: str, fast: bool, said: list[bool]) -> Answer:
    _empty_the_queue()
    arguments = {**case.setup(endpoint), **case.arguments}
    body, headers = _request(case, key, arguments)
    del said[:]

    async def go() -> Answer:
        try:
            return await _send(body, headers)
        finally:
            await mcp.RUNTIME.stop()  # the manager's task belongs to this event loop

    with override_settings(SWITCHBOARD_MCP_FAST_PATH=fast):
        answer = asyncio.run(go())
    path = FAST if said == [True] else SDK
    return Answer(answer.status, answer.headers, answer.body, path)


@pytest.fixture
def fast_endpoint(
    personas: Personas, one_hop_thread: dbthread.Pool
) -> Callable[[tuple[str, ...] | None], str]:
    """The key of the one endpoint the cases call, slug "fast", with the verbs the case sets
    (all of them by default). The calls' hops run on one thread whose connection is closed
    after the test."""

    def key_for(verbs: tuple[str, ...] | None) -> str:
        endpoint = EndpointFactory(
            owner=personas.alice, slug="fast", verbs=list(verbs or [v.value for v in Verb])
        )
        return mint_key(endpoint)[1]

    return key_for


@pytest.mark.parametrize("name", list(CASES))
def test_the_fast_path_answers_as_the_sdk_does(
    name: str, fast_endpoint: Callable[[tuple[str, ...] | None], str], answered_by: list[bool]
) -> None:
    case = CASES[name]
    key = fast_endpoint(case.verbs)
    endpoint = Endpoint.objects.get(slug="fast")
    fast = _run(case, endpoint, key, True, answered_by)
    sdk = _run(case, endpoint, key, False, answered_by)

    assert sdk.path == SDK  # the setting sends everything to the SDK
    assert fast.path == case.path, (name, fast.body[:300])
    assert fast.status == sdk.status
    assert masked(fast.body) == masked(sdk.body)

    def without_length(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        return [(k, v) for k, v in headers if k != b"content-length"]

    assert without_length(fast.headers) == without_length(sdk.headers)
    for answer in (fast, sdk):
        lengths = [v for k, v in answer.headers if k == b"content-length"]
        assert lengths == [str(len(answer.body)).encode()]


def test_a_tool_error_and_a_success_have_the_shapes_agents_read(
    fast_endpoint: Callable[[tuple[str, ...] | None], str], answered_by: list[bool]
) -> None:
    """Spelled out once (the comparison above would pass if both paths changed alike)."""
    key = fast_endpoint(None)
    endpoint = Endpoint.objects.get(slug="fast")
    ok = _run(CASES["claim_next"], endpoint, key, True, answered_by)
    assert ok.path == FAST and ok.status == 200
    result = json.loads(ok.body)["result"]
    assert list(result) == ["content", "isError", "resultType", "structuredContent", "_meta"]
    assert result["isError"] is False and result["resultType"] == "complete"
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert result["structuredContent"]["todo"]["state"] == "claimed"
    assert result["structuredContent"]["todo"]["owner"] == f"endpoint:{endpoint.id}"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "switchboard"
    assert b"pending \\u2014 \\u00e9" in ok.body  # ASCII on the wire, as the SDK writes it

    refused = _run(CASES["conflict: complete a pending todo"], endpoint, key, True, answered_by)
    assert refused.path == FAST and refused.status == 200
    result = json.loads(refused.body)["result"]
    assert result["isError"] is True and "structuredContent" not in result
    assert json.loads(result["content"][0]["text"])["error"]["code"] == "conflict"


def test_a_rate_limited_call_is_answered_alike(
    fast_endpoint: Callable[[tuple[str, ...] | None], str],
    answered_by: list[bool],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = fast_endpoint(None)
    endpoint = Endpoint.objects.get(slug="fast")
    real = frontdoor.hit

    async def endpoint_over(door: Door, dimension: str, key: str, per_minute: int) -> int | None:
        return 17 if dimension == "endpoint" else await real(door, dimension, key, per_minute)

    monkeypatch.setattr(frontdoor, "hit", endpoint_over)
    for name in ("list_todos", "unknown tool"):
        fast = _run(CASES[name], endpoint, key, True, answered_by)
        sdk = _run(CASES[name], endpoint, key, False, answered_by)
        assert fast.path == CASES[name].path
        assert (fast.status, masked(fast.body)) == (sdk.status, masked(sdk.body))
        assert b"rate_limited" in fast.body and b"retry after 17 s" in fast.body


def test_a_handler_that_raises_gets_the_sdks_internal_error(
    fast_endpoint: Callable[[tuple[str, ...] | None], str],
    answered_by: list[bool],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = fast_endpoint(None)
    endpoint = Endpoint.objects.get(slug="fast")

    def broken(name: str, arguments: Any) -> str | None:
        raise RuntimeError("a bug outside the tool's own error mapping")

    monkeypatch.setattr(mcp, "_argument_error", broken)
    fast = _run(CASES["list_todos"], endpoint, key, True, answered_by)
    sdk = _run(CASES["list_todos"], endpoint, key, False, answered_by)
    assert fast.path == FAST
    assert (fast.status, fast.body, fast.headers) == (sdk.status, sdk.body, sdk.headers)
    assert json.loads(fast.body)["error"] == {"code": -32603, "message": "Internal server error"}


def test_the_legacy_era_is_left_to_the_sdk(
    fast_endpoint: Callable[[tuple[str, ...] | None], str], answered_by: list[bool]
) -> None:
    key = fast_endpoint(None)
    endpoint = Endpoint.objects.get(slug="fast")
    legacy = Case(
        "list_todos",
        meta={"progressToken": 3},
        headers={"mcp-protocol-version": LEGACY, "mcp-method": None, "mcp-name": None},
        path=SDK,
    )
    fast = _run(legacy, endpoint, key, True, answered_by)
    assert answered_by == [] and fast.path == SDK  # never asked: the transport kept it
    assert fast.status == 200 and json.loads(fast.body)["result"]["isError"] is False


def test_a_recording_tracer_provider_sends_calls_to_the_sdk(
    fast_endpoint: Callable[[tuple[str, ...] | None], str],
    answered_by: list[bool],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The SDK's span would be recorded then: the fast path must not skip it."""
    from opentelemetry import trace

    key = fast_endpoint(None)
    endpoint = Endpoint.objects.get(slug="fast")
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.NoOpTracerProvider())
    assert not fastpath.enabled()
    answer = _run(CASES["list_todos"], endpoint, key, True, answered_by)
    assert answer.path == SDK and answer.status == 200


def test_lifecycle_untouched_by_a_refused_call(
    fast_endpoint: Callable[[tuple[str, ...] | None], str], answered_by: list[bool]
) -> None:
    """A tool error on the fast path changes nothing (bad input: nothing changed)."""
    key = fast_endpoint(None)
    endpoint = Endpoint.objects.get(slug="fast")
    answer = _run(CASES["unstorable"], endpoint, key, True, answered_by)
    assert answer.path == FAST and b"invalid" in answer.body
    [todo] = Todo.objects.filter(endpoint=endpoint)
    assert todo.state == "claimed" and todo.finished_at is None


def test_the_installed_sdk_is_one_this_test_proved() -> None:
    """The tripwire: after an SDK upgrade this fails until the comparisons above pass on it and
    its version joins ``PROVEN_SDK_VERSIONS``."""
    assert set(fastpath.installed_sdk().values()) <= fastpath.PROVEN_SDK_VERSIONS
    assert fastpath.sdk_proven()


def test_an_sdk_release_not_proven_turns_the_fast_path_off_with_one_warning(
    fast_endpoint: Callable[[tuple[str, ...] | None], str],
    answered_by: list[bool],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = fast_endpoint(None)
    endpoint = Endpoint.objects.get(slug="fast")
    assert _run(CASES["list_todos"], endpoint, key, True, answered_by).path == FAST

    monkeypatch.setattr(fastpath, "installed_sdk", lambda: {"mcp": "2.4.0", "mcp-types": "2.4.0"})
    monkeypatch.setattr(fastpath, "_proven", None)  # as in a process started on that release
    with caplog.at_level("WARNING", logger="mcp_server.fastpath"):
        first = _run(CASES["list_todos"], endpoint, key, True, answered_by)
        second = _run(CASES["list_todos"], endpoint, key, True, answered_by)
    assert first.path == SDK and second.path == SDK  # the SDK answered both
    assert first.status == 200 and json.loads(first.body)["result"]["isError"] is False
    warnings = [r.getMessage() for r in caplog.records if r.name == "mcp_server.fastpath"]
    assert len(warnings) == 1
    assert "mcp 2.4.0, mcp-types 2.4.0" in warnings[0] and "2.3.0" in warnings[0]
