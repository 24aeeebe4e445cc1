"""/mcp/{slug} at the HTTP level: authentication, legacy sessions across processes, bad input.

Raw HTTP (httpx2) where the SDK client would refuse to send the request. Every answer must be
JSON (a JSON-RPC error for a refusal), never a 500 and never an HTML page.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx2
import pytest
from django.utils import timezone
from mcp.shared.exceptions import MCPError

from switchboard.auth import KEY_CACHE_SECONDS
from switchboard.models import EndpointKey
from tests.base import Personas
from tests.mcp.conftest import MODES, LiveServer, mcp_client, run
from tests.mcp.wire import (
    ENVELOPE,
    MODERN,
    TOOLS_LIST,
    assert_jsonrpc_error,
    initialize,
    legacy_headers,
    modern_headers,
    post,
    tool_call,
)
from todos import lifecycle

pytestmark = pytest.mark.django_db(transaction=True)


# --- authentication --------------------------------------------------------------------------


def test_a_key_on_another_endpoints_slug_is_401_with_a_bearer_challenge(
    live: LiveServer, personas: Personas
) -> None:
    response = post(live, modern_headers(personas.key_a, "tools/list"), TOOLS_LIST, "agent-b")
    assert_jsonrpc_error(response, 401, -32600)
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="switchboard"')
    assert 'error="invalid_token"' in challenge


def test_a_slug_that_names_no_endpoint_is_the_same_401_as_a_foreign_one(
    live: LiveServer, personas: Personas
) -> None:
    """Not a 404: which slugs exist is not told to whoever holds some key (docs/guides/agents.md,
    "Errors"); 404 is for a path that is not /mcp/{slug}."""
    wrong_slug = post(live, modern_headers(personas.key_a, "tools/list"), TOOLS_LIST, "agent-b")
    response = post(live, modern_headers(personas.key_a, "tools/list"), TOOLS_LIST, "no-such-slug")
    assert_jsonrpc_error(response, 401, -32600)
    assert response.json() == wrong_slug.json()
    assert response.headers["www-authenticate"] == wrong_slug.headers["www-authenticate"]


@pytest.mark.parametrize(
    ("authorization", "presented"),
    [
        (None, False),
        ("Basic YWxpY2U6eA==", False),
        ("Bearer", False),
        ("Bearer sbk_a sbk_b", False),
        ("Bearer sbk_nope", True),
        ("Bearer not-a-key", True),
    ],
)
def test_missing_and_unknown_credentials_get_the_same_401(
    live: LiveServer, personas: Personas, authorization: str | None, presented: bool
) -> None:
    """One body for every refusal; the challenge names ``invalid_token`` only when a bearer
    token was presented, and is then the same however it failed (RFC 6750 §3.1)."""
    headers = modern_headers(personas.key_a, "tools/list")
    del headers["Authorization"]
    if authorization is not None:
        headers["Authorization"] = authorization
    wrong_slug = post(live, modern_headers(personas.key_a, "tools/list"), TOOLS_LIST, "agent-b")
    response = post(live, headers, TOOLS_LIST)
    assert_jsonrpc_error(response, 401, -32600)
    assert response.json() == wrong_slug.json()
    challenge = response.headers["www-authenticate"]
    if presented:
        assert challenge == wrong_slug.headers["www-authenticate"]
    else:
        assert challenge == 'Bearer realm="switchboard"'
        assert "error" not in challenge


# What the docs promise: a revocation reaches every request within a second: none sent later
# passes. The cache keeps a key a little less (KEY_CACHE_SECONDS).
PROMISED_SECONDS = 1.0


def _accepted_for(server: LiveServer, key: str, slug: str, revoked_at: float) -> float:
    """Poll tools/list with ``key`` until it is refused; return how long after ``revoked_at``
    (``time.monotonic()`` just after the revocation committed) the last request it accepted was
    sent (0 when the first poll was refused).

    The server keeps a resolved key for ``KEY_CACHE_SECONDS`` from the start of the lookup
    that read it, and that lookup started before the commit: so no request sent that long
    after ``revoked_at`` may pass (both processes read the same monotonic clock). When the
    refused request was sent says nothing more: under load a poll can start late."""
    deadline = revoked_at + KEY_CACHE_SECONDS
    accepted = 0.0
    while True:
        sent = time.monotonic()
        response = post(server, modern_headers(key, "tools/list"), TOOLS_LIST, slug)
        if response.status_code == 401:
            assert_jsonrpc_error(response, 401, -32600)
            return accepted
        assert response.status_code == 200, response.text
        assert sent < deadline, f"still accepted {sent - revoked_at:.3f} s after revocation"
        accepted = sent - revoked_at
        time.sleep(0.02)


def test_a_revoked_key_and_a_revoked_endpoint_are_refused_within_a_second(
    live: LiveServer, personas: Personas
) -> None:
    # Resolved (and cached by the server) just before each revocation.
    assert post(live, modern_headers(personas.key_a, "tools/list"), TOOLS_LIST).status_code == 200
    EndpointKey.objects.filter(endpoint=personas.endpoint_a).update(revoked_at=timezone.now())
    key_accepted = _accepted_for(live, personas.key_a, "agent-a", time.monotonic())

    assert (
        post(live, modern_headers(personas.key_b, "tools/list"), TOOLS_LIST, "agent-b").status_code
        == 200
    )
    lifecycle.revoke_endpoint(personas.bob.pk, personas.endpoint_b.pk)
    endpoint_accepted = _accepted_for(live, personas.key_b, "agent-b", time.monotonic())
    assert key_accepted <= PROMISED_SECONDS and endpoint_accepted <= PROMISED_SECONDS


def test_a_revocation_reaches_every_process_within_a_second(
    live_servers: tuple[LiveServer, LiveServer], personas: Personas
) -> None:
    """Each process keeps its own cache: a revocation made anywhere (here, this test process,
    as the Board of another process would) reaches both without any message between them."""
    for server in live_servers:
        assert (
            post(server, modern_headers(personas.key_a, "tools/list"), TOOLS_LIST).status_code
            == 200
        )
    EndpointKey.objects.filter(endpoint=personas.endpoint_a).update(revoked_at=timezone.now())
    revoked_at = time.monotonic()
    for server in live_servers:
        assert _accepted_for(server, personas.key_a, "agent-a", revoked_at) <= PROMISED_SECONDS


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_client_sees_the_401_as_an_error(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-b"), personas.key_a, mode) as client:
            await client.list_tools()

    with pytest.raises((MCPError, ExceptionGroup)):
        run(scenario())


# --- legacy sessions -------------------------------------------------------------------------


def test_a_legacy_session_opened_on_one_process_continues_on_another(
    live_servers: tuple[LiveServer, LiveServer], personas: Personas
) -> None:
    first, second = live_servers
    todo = lifecycle.create(personas.endpoint_a.id, queue="q")
    session = initialize(first, personas.key_a)

    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(second, legacy_headers(personas.key_a, session), initialized).status_code == 202
    response = post(
        second,
        legacy_headers(personas.key_a, session),
        tool_call("claim_next", {"queue": "q"}, modern=False),
    )
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["todo"]["id"] == todo.id
    # Back on the first process, same session.
    response = post(
        first,
        legacy_headers(personas.key_a, session),
        tool_call("complete", {"id": todo.id}, modern=False),
    )
    assert response.json()["result"]["structuredContent"]["state"] == "completed"
    # The attempt records the session it was claimed in.
    from attempts.models import TodoAttempt

    assert TodoAttempt.objects.get(todo_id=todo.id).claimer_session == session


class Alternating(httpx2.AsyncBaseTransport):
    """Sends each request to the next server in turn, as a round-robin load balancer would."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.inner = httpx2.AsyncHTTPTransport()
        self.sent: list[int] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self.ports[len(self.sent) % len(self.ports)]
        self.sent.append(port)
        request.url = request.url.copy_with(port=port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_the_sdk_legacy_client_works_through_a_round_robin_of_two_processes(
    live_servers: tuple[LiveServer, LiveServer], personas: Personas
) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    first, second = live_servers
    todos = [lifecycle.create(personas.endpoint_a.id, queue="q").id for _ in range(3)]
    transport = Alternating([first.port, second.port])

    async def scenario() -> list[str]:
        headers = {"Authorization": f"Bearer {personas.key_a}"}
        async with httpx2.AsyncClient(headers=headers, transport=transport, timeout=30) as http:
            url = first.mcp_url("agent-a")
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as c:
                done = []
                for _ in todos:
                    claimed = await c.call_tool("claim_next", {"queue": "q"})
                    assert isinstance(claimed.structured_content, dict)
                    todo_id = claimed.structured_content["todo"]["id"]
                    completed = await c.call_tool("complete", {"id": todo_id})
                    assert not completed.is_error
                    done.append(todo_id)
                return done

    assert sorted(run(scenario())) == sorted(todos)
    assert {first.port, second.port} <= set(transport.sent)


def test_a_forged_or_foreign_session_id_is_404(live: LiveServer, personas: Personas) -> None:
    session_b = initialize(live, personas.key_b, "agent-b")  # valid, but for endpoint B
    session_a = initialize(live, personas.key_a)
    forged = session_a[:-4] + ("AAAA" if not session_a.endswith("AAAA") else "BBBB")
    for session in (session_b, forged, "sbs_made-up", "x" * 300):
        response = post(
            live,
            legacy_headers(personas.key_a, session),
            tool_call("list_todos", {}, modern=False),
        )
        assert_jsonrpc_error(response, 404, -32600)


def test_a_modern_request_ignores_a_session_header(live: LiveServer, personas: Personas) -> None:
    headers = {**modern_headers(personas.key_a, "tools/list"), "Mcp-Session-Id": "whatever"}
    response = post(live, headers, TOOLS_LIST)
    assert response.status_code == 200
    assert "mcp-session-id" not in response.headers


# --- bad input -------------------------------------------------------------------------------


@pytest.fixture
def key(personas: Personas) -> str:
    return personas.key_a


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b"", -32700),
        (b"[]", -32600),
        (json.dumps([TOOLS_LIST]).encode(), -32600),
        (b'"a string"', -32600),
        (json.dumps({**TOOLS_LIST, "jsonrpc": "1.0"}).encode(), -32600),
        (json.dumps({k: v for k, v in TOOLS_LIST.items() if k != "jsonrpc"}).encode(), -32600),
        (json.dumps({**TOOLS_LIST, "method": 5}).encode(), -32600),
        (json.dumps({**TOOLS_LIST, "id": [1]}).encode(), -32600),
        (json.dumps({**TOOLS_LIST, "params": [1, 2]}).encode(), -32602),
        (json.dumps({"jsonrpc": "2.0", "id": 3}).encode(), -32600),
    ],
)
def test_malformed_json_rpc_gets_its_json_rpc_error(
    live: LiveServer, key: str, era: str, body: bytes, code: int
) -> None:
    headers = modern_headers(key, "tools/list") if era == "modern" else legacy_headers(key)
    assert_jsonrpc_error(post(live, headers, body), 400, code)


def test_an_unknown_method_is_method_not_found(live: LiveServer, key: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "todos/steal", "params": {"_meta": ENVELOPE}}
    assert_jsonrpc_error(post(live, modern_headers(key, "todos/steal"), body), 404, -32601)
    legacy = post(live, legacy_headers(key), {"jsonrpc": "2.0", "id": 1, "method": "todos/steal"})
    assert legacy.status_code < 500
    assert legacy.json()["error"]["code"] == -32601


def test_an_unknown_tool_is_a_protocol_error_in_both_eras(live: LiveServer, key: str) -> None:
    modern = post(live, modern_headers(key, "tools/call", "nope"), tool_call("nope", {}))
    assert modern.status_code < 500
    assert modern.json()["error"]["code"] == -32602
    legacy = post(live, legacy_headers(key), tool_call("nope", {}, modern=False))
    assert legacy.status_code < 500
    assert legacy.json()["error"]["code"] == -32602


def test_arguments_that_are_not_an_object_are_invalid_params(live: LiveServer, key: str) -> None:
    body = tool_call("list_todos", {})
    body["params"]["arguments"] = ["not", "an", "object"]
    response = post(live, modern_headers(key, "tools/call", "list_todos"), body)
    assert response.status_code in (200, 400)
    assert response.json()["error"]["code"] == -32602


def test_a_body_over_the_cap_is_413(live: LiveServer, key: str) -> None:
    body = tool_call("complete", {"id": "td_x", "summary": "x" * (70 * 1024)})
    assert_jsonrpc_error(
        post(live, modern_headers(key, "tools/call", "complete"), body), 413, -32600
    )

    # Without a Content-Length to go by (chunked), the cap still holds.
    def chunks() -> Iterator[bytes]:
        data = json.dumps(body).encode()
        for i in range(0, len(data), 8192):
            yield data[i : i + 8192]

    response = httpx2.post(
        live.mcp_url("agent-a"),
        headers=modern_headers(key, "tools/call", "complete"),
        content=chunks(),
        timeout=30,
    )
    assert_jsonrpc_error(response, 413, -32600)


def test_mcp_headers_missing_or_contradicting_the_body_are_header_mismatch(
    live: LiveServer, key: str
) -> None:
    call = tool_call("list_todos", {})
    no_method = modern_headers(key, "tools/call", "list_todos")
    del no_method["Mcp-Method"]
    assert_jsonrpc_error(post(live, no_method, call), 400, -32020)
    no_name = modern_headers(key, "tools/call")
    assert_jsonrpc_error(post(live, no_name, call), 400, -32020)
    wrong_name = modern_headers(key, "tools/call", "claim_next")
    assert_jsonrpc_error(post(live, wrong_name, call), 400, -32020)
    wrong_method = modern_headers(key, "tools/list", "list_todos")
    assert_jsonrpc_error(post(live, wrong_method, call), 400, -32020)
    other_version = {**modern_headers(key, "tools/call", "list_todos")}
    other_version["MCP-Protocol-Version"] = "2099-01-01"
    assert_jsonrpc_error(post(live, other_version, call), 400, -32020)
    missing_envelope = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert_jsonrpc_error(
        post(live, modern_headers(key, "tools/list"), missing_envelope), 400, -32602
    )


def test_an_unsupported_protocol_version_names_the_supported_ones(
    live: LiveServer, key: str
) -> None:
    envelope = {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": envelope}}
    headers = {**modern_headers(key, "tools/list"), "MCP-Protocol-Version": "2099-01-01"}
    error = assert_jsonrpc_error(post(live, headers, body), 400, -32022)
    assert MODERN in error["error"]["data"]["supported"]


@pytest.mark.parametrize("accept", ["", "text/html"])
def test_an_accept_header_without_json_is_406_in_json(
    live: LiveServer, key: str, accept: str
) -> None:
    # (httpx2 sends Accept: */* when none is given, so "missing" is sent as empty.)
    for headers in (modern_headers(key, "tools/list"), legacy_headers(key)):
        headers["Accept"] = accept
        assert_jsonrpc_error(post(live, headers, TOOLS_LIST), 406, -32600)


def test_a_body_that_is_not_declared_json_is_415(live: LiveServer, key: str) -> None:
    headers = {**modern_headers(key, "tools/list"), "Content-Type": "text/plain"}
    assert_jsonrpc_error(post(live, headers, TOOLS_LIST), 415, -32600)


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH", "OPTIONS"])
def test_methods_other_than_post_are_405_with_allow(
    live: LiveServer, key: str, method: str
) -> None:
    response = httpx2.request(
        method,
        live.mcp_url("agent-a"),
        headers={"Authorization": f"Bearer {key}", "Accept": "text/event-stream"},
        timeout=30,
    )
    assert_jsonrpc_error(response, 405, -32600)
    assert response.headers["allow"] == "POST"


def test_a_foreign_origin_is_403_and_an_unknown_host_421(live: LiveServer, key: str) -> None:
    evil = {**modern_headers(key, "tools/list"), "Origin": "http://evil.example"}
    assert_jsonrpc_error(post(live, evil, TOOLS_LIST), 403, -32600)
    null = {**modern_headers(key, "tools/list"), "Origin": "null"}
    assert_jsonrpc_error(post(live, null, TOOLS_LIST), 403, -32600)
    same = {**modern_headers(key, "tools/list"), "Origin": f"http://localhost:{live.port}"}
    assert post(live, same, TOOLS_LIST).status_code == 200
    other_port = {
        **modern_headers(key, "tools/list"),
        "Origin": f"http://localhost:{live.port + 1}",
    }
    assert_jsonrpc_error(post(live, other_port, TOOLS_LIST), 403, -32600)
    rebound = {**modern_headers(key, "tools/list"), "Host": "attacker.example"}
    assert_jsonrpc_error(post(live, rebound, TOOLS_LIST), 421, -32600)


@pytest.mark.parametrize("path", ["/mcp", "/mcp/", "/mcp/agent-a/extra", "/mcp/a/b/c"])
def test_paths_that_name_no_endpoint_are_404_in_json(live: LiveServer, key: str, path: str) -> None:
    response = httpx2.post(
        live.base + path, headers=modern_headers(key, "tools/list"), json=TOOLS_LIST, timeout=30
    )
    assert_jsonrpc_error(response, 404, -32600)


def test_a_trailing_slash_is_the_same_endpoint(live: LiveServer, key: str) -> None:
    response = httpx2.post(
        live.mcp_url("agent-a") + "/",
        headers=modern_headers(key, "tools/list"),
        json=TOOLS_LIST,
        timeout=30,
    )
    assert response.status_code == 200


def test_a_notification_is_accepted_with_202(live: LiveServer, key: str) -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(live, legacy_headers(key), note).status_code == 202
    cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    assert post(live, modern_headers(key, "notifications/cancelled"), cancelled).status_code == 202


def test_server_discover_answers_modern_clients(live: LiveServer, key: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": ENVELOPE}}
    response = post(live, modern_headers(key, "server/discover"), body)
    assert response.status_code == 200
    result = response.json()["result"]
    assert MODERN in result["supportedVersions"]
    assert "tools" in result["capabilities"]
