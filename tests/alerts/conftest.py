"""A webhook receiver on loopback (real HTTP) that checks the Standard Webhooks signature of
every POST with its own verifier, written from the spec, not the product's code."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


def standard_webhooks_valid(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """The spec's check: base64 HMAC-SHA256 of ``id.timestamp.body`` under the key after
    ``whsec_``, among the space-separated ``v1,`` signatures; the timestamp within 5 minutes."""
    lower = {k.lower(): v for k, v in headers.items()}
    msg_id, stamp = lower["webhook-id"], lower["webhook-timestamp"]
    if abs(time.time() - int(stamp)) > 300:
        return False
    key = base64.b64decode(secret.split("_", 1)[1])
    expected = base64.b64encode(
        hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
    ).decode()
    given = [s.split(",", 1)[1] for s in lower["webhook-signature"].split() if s.startswith("v1,")]
    return any(hmac.compare_digest(expected, g) for g in given)


@dataclass
class Receiver:
    status: int = 204
    delay: float = 0.0
    secret: str = ""
    url: str = ""
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    verified: list[bool] = field(default_factory=list)

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.received]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = dict(self.headers.items())
            state.received.append((headers, body))
            if state.secret:
                state.verified.append(standard_webhooks_valid(state.secret, headers, body))
            if state.delay:
                time.sleep(state.delay)
            self.send_response(state.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://localhost:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
