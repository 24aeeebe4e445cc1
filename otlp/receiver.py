"""``POST /otlp/{slug}/v1/traces``: the ASGI app in front of ``otlp.ingest``.

In order: the path names an endpoint and ``SWITCHBOARD_OTLP`` is on (404 otherwise); POST
(405); then the front door's admission (``switchboard/lib/frontdoor.py``, configured by
``DOOR``): the per-address limiter, before authentication, so a flood of bad keys never reaches
the database (429); the bearer (``switchboard.auth``, the same resolution MCP uses: the key must
belong to ``{slug}``; 401); the per-endpoint limiter (429); the body, read under
``SWITCHBOARD_OTLP_MAX_BODY_BYTES`` as it arrives (413, before it is buffered; the server
refuses a declared over-cap body before the application runs); then, in a worker thread, decode
(415, 400, and 413 again after decompression), bind, translate, mask and store, committed
before the answer. Every answer is encoded like the request (``otlp.response``), never HTML, never
a 500: a database that cannot be reached is 503 with ``Retry-After``, and so is anything
unexpected (logged for operators), because both are worth a retry and neither is the sender's
fault. The span counts and the request's latency go to the metrics last.
"""

from __future__ import annotations

import logging
import re
import time

from django.conf import settings
from django.db import DatabaseError

from otlp import decode, response
from otlp.ingest import Outcome, ingest
from switchboard import runtime_settings
from switchboard.auth import BearerRejected, aresolve_endpoint_bearer
from switchboard.lib import asgi, dbthread, frontdoor, metrics
from switchboard.lib.asgi import Receive, Scope, Send
from switchboard.models import Endpoint

logger = logging.getLogger(__name__)


PREFIX = "/otlp"
_PATH = re.compile(r"^/otlp/([^/]+)/v1/traces/?$")
RETRY_AFTER_UNAVAILABLE = "5"

_ingest = dbthread.wrap(ingest)


def encode_refusal(refused: frontdoor.Refused, content_type: str | None) -> tuple[str, bytes]:
    """A refusal as OTLP/HTTP answers one: a ``google.rpc.Status`` in the request's encoding."""
    reply = response.failure(response.encoding_of(content_type), refused.status, refused.message)
    return reply.content_type, reply.body


DOOR = frontdoor.Door(
    name="otlp",
    cap=lambda: int(settings.SWITCHBOARD_OTLP_MAX_BODY_BYTES),
    encode=encode_refusal,
    rate_per_address="otlp_rate_per_address",
    rate_per_endpoint="otlp_rate_per_endpoint",
)


class _Refusal(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


async def _caller(scope: Scope, slug: str) -> Endpoint:
    """The door's credentials step: the endpoint the bearer names."""
    try:
        return await aresolve_endpoint_bearer(scope, slug)
    except BearerRejected as rejected:
        raise rejected.refusal() from None


async def _serve(scope: Scope, receive: Receive) -> tuple[response.Reply, Outcome | None]:
    encoding = response.encoding_of(asgi.header(scope, b"content-type"))
    match = _PATH.match(scope.get("path", ""))
    if not settings.SWITCHBOARD_OTLP or match is None:
        raise _Refusal(404, "not found: traces go to /otlp/{endpoint-slug}/v1/traces")
    if scope.get("method") != "POST":
        raise _Refusal(405, "method not allowed: export traces with POST", {"Allow": "POST"})
    slug = match.group(1)
    current = await runtime_settings.acurrent_or_defaults()
    admitted = await frontdoor.admit(
        DOOR,
        scope,
        current,
        lambda scope: _caller(scope, slug),
        endpoint_key=lambda endpoint: str(endpoint.id),
    )
    endpoint = admitted.caller
    body = await frontdoor.read_body(DOOR, scope, receive)
    cap = DOOR.cap()
    try:
        outcome: Outcome = await _ingest(
            endpoint.id,
            body,
            asgi.header(scope, b"content-type"),
            asgi.header(scope, b"content-encoding"),
            cap,
        )
    except decode.Refused as refused:
        raise _Refusal(refused.status, refused.message) from None
    return response.success(encoding, outcome.rejected, outcome.message()), outcome


async def application(scope: Scope, receive: Receive, send: Send) -> None:
    """The ASGI app for ``/otlp`` and everything under it."""
    started = time.perf_counter()
    encoding = response.encoding_of(asgi.header(scope, b"content-type"))
    outcome: Outcome | None = None
    try:
        reply, outcome = await _serve(scope, receive)
    except asgi.ClientDisconnected:
        return
    except (_Refusal, frontdoor.Refused) as refusal:
        reply = response.failure(encoding, refusal.status, refusal.message, refusal.headers)
    except DatabaseError:
        logger.exception("OTLP: the database is unavailable")
        reply = response.failure(
            encoding,
            503,
            "the database is unavailable; retry later",
            {"Retry-After": RETRY_AFTER_UNAVAILABLE},
        )
    except Exception:
        logger.exception("OTLP request failed")
        reply = response.failure(
            encoding, 503, "internal error; retry later", {"Retry-After": RETRY_AFTER_UNAVAILABLE}
        )
    await _send(send, reply)
    if outcome is not None:
        metrics.otlp_spans("accepted", outcome.accepted)
        metrics.otlp_spans("rejected_unbound", outcome.unbound)
        metrics.otlp_spans("dropped_cap", outcome.dropped_cap)
        metrics.otlp_spans("invalid", outcome.invalid)
    metrics.otlp_request(reply.status, time.perf_counter() - started)


async def _send(send: Send, reply: response.Reply) -> None:
    headers = [
        (b"content-type", reply.content_type.encode()),
        (b"content-length", str(len(reply.body)).encode()),
        (b"cache-control", b"no-store"),
        *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers.items()),
    ]
    if reply.status == 413:
        # The rest of an oversized body is never read: close rather than drain it.
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body, "more_body": False})
