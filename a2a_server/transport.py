"""``/a2a/{slug}``: the ASGI entry in front of the A2A SDK's Starlette routes.

In order, before the SDK sees a request: the path names an endpoint; the client address is
under its rate (``switchboard.lib.limits``, 429 with ``Retry-After``); the bearer resolves to
that endpoint (``switchboard.auth``, 401 otherwise, alike for every failure); the endpoint's
verbs include ``a2a`` (403 otherwise); the endpoint is under its rate (429); the body fits
``SWITCHBOARD_MAX_BODY_BYTES``. Then the
endpoint goes into the ASGI scope and the request goes to one shared Starlette app:

- ``POST /a2a/{slug}``: JSON-RPC, protocol 1.0 and the 0.3 compatibility mode
  (``a2a_server.handler``);
- ``GET /a2a/{slug}/.well-known/agent-card.json``: the endpoint's card (``a2a_server.card``),
  through the SDK's card route.

Everything that leaves is JSON: refusals here are JSON-RPC error objects, the SDK answers a
malformed request with the JSON-RPC error (HTTP 200, as the A2A JSON-RPC binding does), and a
path or method the routes do not know is a JSON 404/405, never an HTML page or a 500.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re

from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.types import AgentCard
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from django.conf import settings
from django.db import DatabaseError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from a2a_server import card, handler
from switchboard import runtime_settings
from switchboard.auth import BearerRejected, aresolve_endpoint_bearer
from switchboard.lib import asgi, dbthread, limits, metrics
from switchboard.lib.asgi import Receive, Scope, Send
from switchboard.models import Endpoint, Verb

logger = logging.getLogger(__name__)


PREFIX = "/a2a"
_PATH = re.compile(r"^/a2a/([^/]+)(/.*)?$")
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603

# The card being served: set per request before the SDK's card route runs (it asks
# ``_current_card`` for it), so one route serves every endpoint its own card.
_CARD: contextvars.ContextVar[AgentCard] = contextvars.ContextVar("a2a_card")


def is_a2a_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


async def send_error(
    send: Send,
    status: int,
    message: str,
    *,
    code: int = INVALID_REQUEST,
    headers: dict[str, str] | None = None,
) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    ).encode()
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _current_card(_placeholder: AgentCard) -> AgentCard:
    return _CARD.get()


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": exc.detail}}
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


def _routes_app() -> Starlette:
    placeholder = card.card(
        Endpoint(slug="placeholder", name="placeholder"), "http://localhost/", []
    )
    routes = [
        *create_agent_card_routes(
            placeholder, card_modifier=_current_card, card_url=AGENT_CARD_WELL_KNOWN_PATH
        ),
        *create_jsonrpc_routes(
            handler.TodoRequestHandler(),
            rpc_url="/",
            context_builder=handler.ContextBuilder(),
            enable_v0_3_compat=True,
        ),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: _http_error})


_APP = _routes_app()


def _base_url(scope: Scope, slug: str) -> str:
    host = asgi.header(scope, b"host") or "localhost"
    return f"{scope.get('scheme', 'http')}://{host}{PREFIX}/{slug}"


async def _over_rate(send: Send, dimension: str, key: str, per_minute: int) -> bool:
    """Count the request; answer 429 with Retry-After (and say so) when the budget is spent."""
    verdict = await limits.limiter(settings.REDIS_URL).hit("a2a", dimension, key, per_minute)
    if verdict.allowed:
        return False
    metrics.rate_limited("a2a", dimension)
    where = "this address" if dimension == "address" else "this endpoint"
    await send_error(
        send,
        429,
        f"too many requests ({where}); retry after {verdict.retry_after} s",
        headers={"Retry-After": str(verdict.retry_after)},
    )
    return True


async def application(scope: Scope, receive: Receive, send: Send) -> None:
    match = _PATH.match(scope.get("path", ""))
    if match is None:
        await send_error(send, 404, "no endpoint in the path: use /a2a/{slug}")
        return
    slug, rest = match.group(1), match.group(2) or "/"
    current = await runtime_settings.acurrent_or_defaults()
    address = limits.client_address(scope)
    if await _over_rate(send, "address", address, current.a2a_rate_per_address):
        return
    try:
        endpoint = await aresolve_endpoint_bearer(scope, slug)
    except BearerRejected as exc:
        await send_error(send, exc.status, exc.message, headers=exc.headers)
        return
    except DatabaseError:
        logger.exception("a2a: database error resolving the bearer")
        await send_error(send, 503, "the database is unavailable", code=INTERNAL_ERROR)
        return
    if not endpoint.allows(Verb.A2A):
        await send_error(send, 403, "this endpoint's verbs do not include a2a")
        return
    if await _over_rate(send, "endpoint", str(endpoint.id), current.a2a_rate_per_endpoint):
        return
    try:
        body = await asgi.read_body(scope, receive, settings.SWITCHBOARD_MAX_BODY_BYTES)
    except asgi.BodyTooLarge as exc:
        await send_error(send, 413, str(exc))
        return
    except asgi.ClientDisconnected:
        return
    if rest == AGENT_CARD_WELL_KNOWN_PATH:
        served = await dbthread.run(card.endpoint_card, endpoint, _base_url(scope, slug))
        _CARD.set(served)
    inner = {
        **scope,
        "path": rest,
        "raw_path": rest.encode(),
        "root_path": scope.get("root_path", "") + f"{PREFIX}/{slug}",
        handler.SCOPE_ENDPOINT: endpoint,
    }
    try:
        await _APP(inner, asgi.replay(body, receive), send)
    except Exception:
        # Starlette answers what the routes raise; this is the last resort (never a 500 page).
        logger.exception("a2a: request failed")
        await send_error(send, 200, "internal error", code=INTERNAL_ERROR)
