"""The server refuses an over-cap body before storing it (switchboard/lib/server.py): a 300 MiB
upload, streamed slowly over a socket to a real daphne process, is answered 413 long before it
ends, the server never reads it to the end, and no temporary file of the server's grows.

The server runs with its own TMPDIR; the check watches the files the process holds open there
(Twisted's spool file is unlinked on creation, so it shows only under /proc/<pid>/fd).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import pytest

from switchboard.lib import server as capped
from tests.live import LiveServer, _start, _stop, _wait_ready

TOTAL = 300 * 1_048_576
PIECE = 256 * 1024
PACE_SECONDS = 0.01  # 25 MiB/s: the whole upload would take 12 s; the server drops it at 5 s
HOOK_CAP = 5 * 1_048_576  # the default SWITCHBOARD_HOOK_MAX_BODY_BYTES
MCP_CAP = 64 * 1024  # SWITCHBOARD_MAX_BODY_BYTES in tests/live.py's environment (MCP, Django)


@pytest.fixture(scope="module")
def spool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("server-tmp")


@pytest.fixture(scope="module")
def server(
    daphne_env: dict[str, str], spool: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    live = _start({**daphne_env, "TMPDIR": str(spool)}, tmp_path_factory.mktemp("srv") / "s.log")
    try:
        _wait_ready(live)
        yield live
    finally:
        _stop(live)


def spooled_bytes(pid: int, spool: Path) -> int:
    """Bytes in the files process ``pid`` holds open under ``spool`` (unlinked ones too)."""
    total = 0
    fds = Path(f"/proc/{pid}/fd")
    for fd in fds.iterdir():
        try:
            target = os.readlink(fd)
            if target.startswith(str(spool)):
                total += os.stat(fd).st_size
        except OSError:
            continue  # closed meanwhile
    return total


@dataclass
class Upload:
    sent: int = 0
    sent_at_answer: int | None = None
    answered_after: float | None = None
    answer: bytes = b""
    most_spooled: int = 0
    error: str | None = None
    reader_done: threading.Event = field(default_factory=threading.Event)


def upload(live: LiveServer, spool: Path, path: str, *, chunked: bool, body: bool = True) -> Upload:
    """Stream a 300 MiB body to ``path`` at ``PACE_SECONDS`` per piece until the server stops it."""
    state = Upload()
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {TOTAL}"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"{framing}\r\n\r\n"
    ).encode()
    piece = (f"{PIECE:x}\r\n".encode() + b"x" * PIECE + b"\r\n") if chunked else b"x" * PIECE
    sock = socket.create_connection(("127.0.0.1", live.port))
    started = time.monotonic()

    def read() -> None:
        try:
            while data := sock.recv(65536):
                if not state.answer:
                    state.sent_at_answer = state.sent
                    state.answered_after = time.monotonic() - started
                state.answer += data
        except OSError:
            pass
        state.reader_done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        sock.sendall(head)
        while body and state.sent < TOTAL:
            sock.sendall(piece)
            state.sent += PIECE
            state.most_spooled = max(state.most_spooled, spooled_bytes(live.process.pid, spool))
            time.sleep(PACE_SECONDS)
    except OSError as exc:
        state.error = type(exc).__name__  # the server dropped the connection
    state.reader_done.wait(timeout=10 if body else 3)
    state.most_spooled = max(state.most_spooled, spooled_bytes(live.process.pid, spool))
    sock.close()
    reader.join(timeout=5)
    return state


def assert_413(state: Upload, path: str, limit: int) -> None:
    """The 413 in the path's own shape: a JSON-RPC error on /mcp, the hooks' JSON elsewhere."""
    head, _, body = state.answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), state.answer[:200]
    assert b"Connection: close" in head and b"Content-Type: application/json" in head
    if path.startswith("/mcp"):
        assert json.loads(body) == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": f"Request body too large (limit {limit} bytes)"},
        }
        return
    assert json.loads(body) == {
        "error": "too_large",
        "message": f"the body is over the {limit}-byte limit",
        "limit": limit,
    }


@pytest.mark.parametrize(("path", "limit"), [("/hooks/nope", HOOK_CAP), ("/mcp/nope", MCP_CAP)])
def test_a_declared_300_mib_body_is_refused_before_it_is_read(
    server: LiveServer, spool: Path, path: str, limit: int
) -> None:
    state = upload(server, spool, path, chunked=False)

    assert_413(state, path, limit)
    # Answered from the headers: the first pieces were still on their way.
    assert state.sent_at_answer is not None and state.sent_at_answer <= 16 * 1_048_576
    # The server stopped the upload: it was never sent to the end, and nothing was spooled.
    assert state.error is not None and state.sent < TOTAL
    assert state.most_spooled == 0


def test_a_chunked_300_mib_body_is_refused_at_the_cap(server: LiveServer, spool: Path) -> None:
    state = upload(server, spool, "/hooks/nope", chunked=True)

    assert_413(state, "/hooks/nope", HOOK_CAP)
    assert state.sent_at_answer is not None
    assert HOOK_CAP < state.sent_at_answer <= HOOK_CAP + 16 * 1_048_576
    assert state.error is not None and state.sent < TOTAL
    assert state.most_spooled == 0


def test_a_declared_length_with_no_body_is_answered_at_once(
    server: LiveServer, spool: Path
) -> None:
    state = upload(server, spool, "/hooks/nope", chunked=False, body=False)

    assert_413(state, "/hooks/nope", HOOK_CAP)
    assert state.answered_after is not None and state.answered_after < 2
    # daphne's access log never sees it; the server logs the refusal itself.
    deadline = time.monotonic() + 5
    while "413: a body over the 5242880-byte cap of '/hooks/nope'" not in server.log_tail(50_000):
        assert time.monotonic() < deadline, server.log_tail()
        time.sleep(0.1)


def test_a_body_within_the_cap_still_reaches_the_application(server: LiveServer) -> None:
    # /healthz is Django's (the default cap, 64 KiB here): a POST is refused by its CSRF check
    # (403), so the body reached the application. One byte more is refused by the server.
    within = b"x" * MCP_CAP
    for content in (within, iter([within[:1000], within[1000:]])):
        assert httpx2.post(server.url("/healthz"), content=content).status_code == 403
    over = within + b"x"
    for content in (over, iter([over[:1000], over[1000:]])):
        answer = httpx2.post(server.url("/healthz"), content=content)
        assert answer.status_code == 413
        assert answer.json()["limit"] == MCP_CAP


def test_an_otlp_413_is_an_otlp_status_in_the_request_s_encoding() -> None:
    from google.rpc.status_pb2 import Status

    from switchboard import asgi
    from switchboard.lib import frontdoor

    door = asgi.ROUTES.route("/otlp/a/v1/traces").door
    kind, body = door.encode(frontdoor.too_large(4096), "application/x-protobuf")
    assert kind == "application/x-protobuf"
    assert Status.FromString(body).message == "the body is over the 4096-byte limit"
    kind, body = door.encode(frontdoor.too_large(4096), "application/json")
    assert kind == "application/json" and "4096-byte" in json.loads(body)["message"]


def test_the_cap_is_the_one_the_path_s_application_enforces() -> None:
    from django.conf import settings

    from switchboard import asgi

    assert capped.cap_for(b"/hooks/github?x=1") == settings.SWITCHBOARD_HOOK_MAX_BODY_BYTES
    assert capped.cap_for(b"/mcp/agent") == settings.SWITCHBOARD_MAX_BODY_BYTES
    assert capped.cap_for(b"/otlp/a/v1/traces") == settings.SWITCHBOARD_OTLP_MAX_BODY_BYTES
    assert capped.cap_for(b"/%68ooks/x") == settings.SWITCHBOARD_HOOK_MAX_BODY_BYTES
    assert capped.cap_for(b"/admin/") == settings.SWITCHBOARD_MAX_BODY_BYTES
    assert asgi.ROUTES.route("/hooks").door.cap() == settings.SWITCHBOARD_HOOK_MAX_BODY_BYTES
    # A prefix is a whole path segment: /hooksmith is Django's.
    assert capped.cap_for(b"/hooksmith") == settings.SWITCHBOARD_MAX_BODY_BYTES
