"""The front door (switchboard/lib/frontdoor.py, switchboard/lib/server.py): every refusal the
server sends before an application runs is in the path's surface's own shape, and slow uploads
are bounded, on a real daphne process over real sockets.

The server here runs with a 2 s body deadline and at most 2 bodies arriving at once per address,
and small caps, so each bound is reached in a few seconds.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest
from google.protobuf import json_format
from google.rpc.status_pb2 import Status

from switchboard.lib import frontdoor
from tests.live import LiveServer, _start, _stop, _wait_ready

BODY_SECONDS = 2
BODIES = 2
CAP = 64 * 1024  # SWITCHBOARD_MAX_BODY_BYTES in tests/live.py's environment (MCP, A2A)
OTLP_CAP = 8 * 1024
HOOK_CAP = 16 * 1024
# The server reads the test database (a hook's source, the runtime settings).
pytestmark = pytest.mark.django_db(transaction=True)

PATHS = {
    "mcp": "/mcp/nope",
    "a2a": "/a2a/nope",
    "otlp": "/otlp/nope/v1/traces",
    "hooks": "/hooks/x",
}


@pytest.fixture(scope="module")
def door(
    daphne_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    env = {
        **daphne_env,
        "SWITCHBOARD_BODY_SECONDS": str(BODY_SECONDS),
        "SWITCHBOARD_BODIES_PER_ADDRESS": str(BODIES),
        "SWITCHBOARD_OTLP_MAX_BODY_BYTES": str(OTLP_CAP),
        "SWITCHBOARD_HOOK_MAX_BODY_BYTES": str(HOOK_CAP),
    }
    live = _start(env, tmp_path_factory.mktemp("door") / "s.log")
    try:
        _wait_ready(live)
        yield live
    finally:
        _stop(live)


def _open(
    live: LiveServer, path: str, framing: str, content_type: str = "application/json"
) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", live.port), timeout=15)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
        f"{framing}\r\n\r\n".encode()
    )
    return sock


def _answer(sock: socket.socket) -> tuple[bytes, bytes]:
    """Read until the server closes: (the head, the body)."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except OSError:
        pass
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body


def _status(head: bytes) -> int:
    return int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0


def _header(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


def assert_shape(surface: str, head: bytes, body: bytes, status: int, words: str) -> None:
    """``body`` is ``surface``'s own refusal: JSON-RPC on /mcp and /a2a, an OTLP Status (JSON
    for a JSON request) on /otlp, the hooks' JSON on /hooks."""
    assert _status(head) == status, head + body
    assert _header(head, b"connection") == b"close"
    assert _header(head, b"content-type") == b"application/json"
    answer = json.loads(body)
    if surface in ("mcp", "a2a"):
        assert answer["jsonrpc"] == "2.0" and answer["id"] is None
        assert answer["error"]["code"] == -32600 and words in answer["error"]["message"]
    elif surface == "otlp":
        status_message = json_format.Parse(body, Status())
        assert status_message.code in (4, 8) and words in status_message.message  # gRPC codes
    else:
        assert set(answer) >= {"error", "message"} and words in answer["message"]


# --- 413 before the body is read, in each surface's shape ---------------------------------------


def test_a_413_on_a2a_is_a_json_rpc_error_declared_or_chunked(door: LiveServer) -> None:
    declared = _open(door, "/a2a/nope", f"Content-Length: {CAP + 1}")
    head, body = _answer(declared)
    assert_shape("a2a", head, body, 413, f"over the {CAP}-byte limit")

    chunked = _open(door, "/a2a/nope", "Transfer-Encoding: chunked")
    piece = b"x" * 4096
    try:
        for _ in range(CAP // len(piece) + 2):
            chunked.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
    except OSError:
        pass  # the server answered and closed at cap + 1
    head, body = _answer(chunked)
    assert_shape("a2a", head, body, 413, f"over the {CAP}-byte limit")


def test_a_413_on_otlp_is_an_otlp_status_in_the_request_s_encoding(door: LiveServer) -> None:
    head, body = _answer(_open(door, PATHS["otlp"], f"Content-Length: {OTLP_CAP + 1}"))
    assert_shape("otlp", head, body, 413, f"over the {OTLP_CAP}-byte limit")

    sock = _open(door, PATHS["otlp"], f"Content-Length: {OTLP_CAP + 1}", "application/x-protobuf")
    head, body = _answer(sock)
    assert _status(head) == 413 and _header(head, b"content-type") == b"application/x-protobuf"
    refusal = Status.FromString(body)
    assert refusal.code == 8 and f"over the {OTLP_CAP}-byte limit" in refusal.message


def test_a_413_on_mcp_is_json_rpc_and_on_hooks_json(door: LiveServer) -> None:
    head, body = _answer(_open(door, PATHS["mcp"], f"Content-Length: {CAP + 1}"))
    assert_shape("mcp", head, body, 413, f"limit {CAP} bytes")
    head, body = _answer(_open(door, PATHS["hooks"], f"Content-Length: {HOOK_CAP + 1}"))
    assert_shape("hooks", head, body, 413, f"over the {HOOK_CAP}-byte limit")
    assert json.loads(body) == {
        "error": "too_large",
        "message": f"the body is over the {HOOK_CAP}-byte limit",
        "limit": HOOK_CAP,
    }


# --- slow uploads -------------------------------------------------------------------------------


@pytest.mark.parametrize("surface", ["mcp", "a2a", "otlp", "hooks"])
def test_a_body_that_does_not_arrive_in_time_is_408_in_the_surface_s_shape(
    door: LiveServer, surface: str
) -> None:
    sock = _open(door, PATHS[surface], "Content-Length: 1000")
    sock.sendall(b"{" * 10)  # and nothing more: a client trickling, or gone quiet
    started = time.monotonic()
    head, body = _answer(sock)
    waited = time.monotonic() - started

    assert_shape(surface, head, body, 408, f"within {BODY_SECONDS} s")
    assert BODY_SECONDS - 0.5 <= waited <= BODY_SECONDS + 8


def test_a_body_that_arrives_in_time_is_not_cut_off(door: LiveServer) -> None:
    # Sent in pieces over most of the deadline: the whole body is in before it; the hooks'
    # view answers it (an unknown source), so the application ran.
    sock = _open(door, "/hooks/no-such-source", "Content-Length: 2")
    time.sleep(BODY_SECONDS / 2)
    sock.sendall(b"{}")
    head, body = _answer_one(sock)
    assert _status(head) == 404 and json.loads(body)["error"] == "unknown_source"


def _answer_one(sock: socket.socket) -> tuple[bytes, bytes]:
    """Read one answer off a kept-alive connection (up to its Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(_header(head, b"content-length") or 0)
    while len(body) < length:
        body += sock.recv(65536)
    sock.close()
    return head, body


@pytest.mark.parametrize("surface", ["mcp", "a2a", "otlp", "hooks"])
def test_an_address_sending_too_many_bodies_at_once_gets_429_in_the_surface_s_shape(
    door: LiveServer, surface: str
) -> None:
    slow = [_open(door, PATHS[surface], "Content-Length: 100") for _ in range(BODIES)]
    for sock in slow:
        sock.sendall(b"{")
    time.sleep(0.3)  # the server has counted both
    head, body = _answer(_open(door, PATHS[surface], "Content-Length: 100"))
    assert_shape(surface, head, body, 429, "already sending")
    assert _header(head, b"retry-after") == b"1"

    for sock in slow:
        sock.close()  # the bodies end (the client gave up): their places are free again
    deadline = time.monotonic() + 5
    while True:
        sock = _open(door, "/hooks/no-such-source", "Content-Length: 2")
        sock.sendall(b"{}")
        head, body = _answer_one(sock)
        if _status(head) == 404 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert _status(head) == 404, head + body


def test_the_refusal_shapes_come_from_the_route_table() -> None:
    from switchboard import asgi

    # One table, one row per surface; a prefix matches whole path segments only.
    assert asgi.ROUTES.route("/a2a/x/.well-known/agent-card.json").door.name == "a2a"
    assert asgi.ROUTES.route("/mcp").door.name == "mcp"
    assert asgi.ROUTES.route("/mcpx").door.name == "django"
    assert asgi.ROUTES.route("/otlp/a/v1/traces").door.name == "otlp"
    assert asgi.ROUTES.route("/hooks/a").door.name == "hooks"
    answer = asgi.ROUTES.refusal("/a2a/x", frontdoor.too_many_bodies(3), None)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 429 Too Many Requests\r\n")
    assert b"Retry-After: 1\r\n" in head
    assert json.loads(body)["error"]["code"] == -32600


@pytest.mark.parametrize("surface", ["mcp", "a2a", "otlp", "hooks"])
def test_a_host_not_in_allowed_hosts_is_421_in_the_surface_s_shape(
    door: LiveServer, surface: str
) -> None:
    """A DNS-rebound name reaches no API, and an agent card never echoes it."""
    path = PATHS[surface] + ("/.well-known/agent-card.json" if surface == "a2a" else "")
    for method in ("POST", "GET") if surface == "a2a" else ("POST",):
        sock = socket.create_connection(("127.0.0.1", door.port), timeout=15)
        sock.sendall(
            f"{method} {path} HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\n"
            "Content-Length: 2\r\nConnection: close\r\n\r\n{}".encode()
        )
        head, body = _answer(sock)
        assert _status(head) == 421, head + body
        assert b"evil.example" not in body
        assert _header(head, b"content-type") == b"application/json"
        answer = json.loads(body)
        if surface in ("mcp", "a2a"):
            assert answer["jsonrpc"] == "2.0" and "ALLOWED_HOSTS" in answer["error"]["message"]
        elif surface == "otlp":
            assert "ALLOWED_HOSTS" in json_format.Parse(body, Status()).message
        else:
            assert "ALLOWED_HOSTS" in answer["message"]


def test_an_exception_that_ends_a_request_is_logged_with_its_path(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """daphne's own line names neither the path nor the socket (switchboard/asgi.py)."""
    import asyncio

    from switchboard import asgi
    from switchboard.lib import changefeed

    async def boom(scope: object, receive: object, send: object) -> None:
        raise RuntimeError("the consumer died")

    monkeypatch.setattr(asgi, "router", boom)
    monkeypatch.setattr(type(changefeed.FEED), "running", property(lambda self: True))
    asgi.logger.addHandler(caplog.handler)  # the test settings' logging may not propagate
    try:
        with pytest.raises(RuntimeError):
            asyncio.run(asgi.with_feed({"type": "websocket", "path": "/ws/live/"}, None, None))
    finally:
        asgi.logger.removeHandler(caplog.handler)

    # The handler sits on the logger and may hear it once more through the root's: one message.
    records = [r for r in caplog.records if r.name == "switchboard.asgi"]
    assert {r.getMessage() for r in records} == {"websocket /ws/live/ ended by an exception"}
    assert all(r.exc_info is not None for r in records)
