"""``/a2a/{slug}``: the ASGI entry in front of the A2A SDK's Starlette routes.

In order, before the SDK sees a request: the path names an endpoint; then the front door's
admission (``switchboard/lib/frontdoor.py``, configured by ``DOOR``): the client address is
under its rate (429 with ``Retry-After``); the bearer resolves to that endpoint
(``switchboard.auth``, or an OAuth token for ``{origin}/a2a/{slug}``, ``switchboard.oauth``;
401 otherwise, alike for every presented bearer, with the OAuth challenge: ``unauthorized``)
whose verbs include ``a2a`` (403 otherwise); the endpoint is under its rate (429); the body
fits ``SWITCHBOARD_MAX_BODY_BYTES`` (413; the server refuses a declared over-cap body before
the application runs, in the same JSON-RPC shape). Then the endpoint goes into the ASGI scope
and the request goes to one shared Starlette app:

- ``POST /a2a/{slug}``: JSON-RPC, protocol 1.0 and the 0.3 compatibility mode
  (``a2a_server.handler``);
- ``GET /a2a/{slug}/.well-known/agent-card.json``: the endpoint's card (``a2a_server.card``),
  through the SDK's card route.

A body whose strings PostgreSQL could not store (a NUL, ``\\u0000``, or a lone surrogate such as
``\\ud800``) or with a number that is not finite (``1e400``) is refused here with "invalid params"
(-32602), before the SDK converts it: none can be written to a text or jsonb column, and the SDK
fails on them with an internal error. The scan is a byte search; only a body that carries such
a token is parsed.

Everything that leaves is JSON: refusals here are JSON-RPC error objects, the SDK answers a
malformed request with the JSON-RPC error (HTTP 200, as the A2A JSON-RPC binding does), and a
path or method the routes do not know is a JSON 404/405, never an HTML page or a 500.
"""

from __future__ import annotations

import contextvars
import json
import logging
import math
import re
from typing import Any

from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.types import AgentCard, TaskState
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from django.conf import settings
from django.db import DatabaseError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from a2a_server import card, handler
from switchboard import oauth, runtime_settings
from switchboard.auth import BearerRejected, aresolve_endpoint_bearer, bearer_token
from switchboard.lib import asgi, dbthread, frontdoor, oauth_scopes
from switchboard.lib.asgi import Receive, Scope, Send
from switchboard.models import Endpoint, Verb

logger = logging.getLogger(__name__)


PREFIX = "/a2a"
_PATH = re.compile(r"^/a2a/([^/]+)(/.*)?$")
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# A JSON escape of NUL or a surrogate, an exponent of three digits or more, or the NaN and
# Infinity that Python's json module accepts: the only bodies worth a second look.
_SUSPECT = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])|[eE][+-]?\d{3}|NaN|Infinity")

# The card being served: set per request before the SDK's card route runs (it asks
# ``_current_card`` for it), so one route serves every endpoint its own card.
_CARD: contextvars.ContextVar[AgentCard] = contextvars.ContextVar("a2a_card")


def _error_body(message: str, code: int = INVALID_REQUEST, request_id: Any = None) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    ).encode()


def _unstorable(value: Any) -> str | None:
    """Why a string or number in ``value`` cannot be stored, or None."""
    if isinstance(value, str):
        if "\x00" in value:
            return "strings must not contain NUL (\\u0000)"
        try:
            value.encode()
        except UnicodeEncodeError:
            return "strings must be valid Unicode (a lone surrogate is not)"
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "numbers must be finite (1e400, NaN and Infinity are not)"
    if isinstance(value, dict):
        return next((why for item in value.items() for why in map(_unstorable, item) if why), None)
    if isinstance(value, list):
        return next((why for why in map(_unstorable, value) if why), None)
    return None


# The names a ListTasks status may give (protobuf's JSON form of the enum).
_TASK_STATE_NAMES = frozenset(TaskState.keys())


def refuse_unknown_status(body: bytes) -> bytes | None:
    """The JSON-RPC error answering a ``ListTasks`` whose ``status`` names no task state, or
    None. The SDK parses params ignoring what it does not know, so a misspelled state
    (``"TASK_STATE_FAILD"``) arrived as no filter at all and listed every task; a number is
    refused later, by ``handler.list_tasks``."""
    if b"ListTasks" not in body or b"status" not in body:
        return None
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None  # the SDK answers a parse error
    if not isinstance(message, dict) or message.get("method") != "ListTasks":
        return None
    params = message.get("params")
    status = params.get("status") if isinstance(params, dict) else None
    if not isinstance(status, str) or status in _TASK_STATE_NAMES:
        return None
    request_id = message.get("id")
    if not isinstance(request_id, (str, int)) or _unstorable(request_id):
        request_id = None
    return _error_body(f"status: {status[:64]!r} is not a task state", INVALID_PARAMS, request_id)


def refuse_unstorable(body: bytes) -> bytes | None:
    """The JSON-RPC error answering a body whose strings cannot be stored, or None."""
    if not _SUSPECT.search(body):
        return None
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None  # the SDK answers a parse error
    why = _unstorable(message)
    if why is None:
        return None
    request_id = message.get("id") if isinstance(message, dict) else None
    if not isinstance(request_id, (str, int)) or _unstorable(request_id):
        request_id = None
    return _error_body(why, INVALID_PARAMS, request_id)


def encode_refusal(refused: frontdoor.Refused, _content_type: str | None) -> tuple[str, bytes]:
    """A refusal at the door (or the server's, before the body is read) as a JSON-RPC error
    object with no id, the shape of every other refusal here."""
    return "application/json", _error_body(refused.message)


DOOR = frontdoor.Door(
    name="a2a",
    cap=lambda: int(settings.SWITCHBOARD_MAX_BODY_BYTES),
    encode=encode_refusal,
    rate_per_address="a2a_rate_per_address",
    rate_per_endpoint="a2a_rate_per_endpoint",
)


async def send_error(
    send: Send,
    status: int,
    message: str,
    *,
    code: int = INVALID_REQUEST,
    headers: dict[str, str] | None = None,
) -> None:
    await _send_body(send, status, _error_body(message, code), headers)


async def _send_body(
    send: Send, status: int, body: bytes, headers: dict[str, str] | None = None
) -> None:
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


def unauthorized(scope: Scope, slug: str, presented: bool) -> frontdoor.Refused:
    """The one 401 of ``/a2a/{slug}``, a key's or a token's alike: the OAuth challenge naming
    the resource's protected-resource metadata by absolute URL and ``todos:submit`` (RFC 9728
    §5.1), so a client that speaks only OAuth discovers the rest from it, and
    ``error="invalid_token"`` only when a bearer was presented (RFC 6750 §3.1)."""
    challenge = oauth.challenge(
        oauth.origin_of(scope),
        oauth.A2A,
        slug,
        (oauth_scopes.SUBMIT,),
        "invalid_token" if presented else None,
    )
    return frontdoor.Refused(
        401,
        frontdoor.UNAUTHORIZED,
        BearerRejected.message,
        headers={"WWW-Authenticate": challenge},
    )


async def _token_caller(scope: Scope, slug: str) -> Endpoint:
    """An OAuth token issued for exactly ``{origin}/a2a/{slug}``: the endpoint cut to its
    scopes; 401 with the OAuth challenge otherwise, 403 ``insufficient_scope`` when the endpoint
    speaks A2A but the token lacks ``todos:submit``."""
    origin = oauth.origin_of(scope)
    try:
        grant = await oauth.aresolve_token(scope, oauth.resource_url(origin, oauth.A2A, slug))
    except oauth.TokenRejected as rejected:
        raise unauthorized(scope, slug, rejected.presented) from None
    if (needed := grant.missing_scope(Verb.A2A)) is not None:
        header = (
            f'Bearer error="insufficient_scope", scope="{needed}", '
            f'resource_metadata="{oauth.metadata_url(origin, oauth.A2A, slug)}"'
        )
        raise frontdoor.Refused(
            403,
            frontdoor.FORBIDDEN,
            f"insufficient_scope: A2A needs the {needed} scope",
            headers={"WWW-Authenticate": header},
        )
    return grant.endpoint


async def _a2a_caller(scope: Scope, slug: str) -> Endpoint:
    """The door's credentials step: the endpoint the bearer names, which must speak A2A. A key
    (``sbk_…``) resolves as everywhere; any other bearer is an OAuth token for this resource."""
    token = bearer_token(scope)
    if token is not None and not token.startswith("sbk_"):
        endpoint = await _token_caller(scope, slug)
    else:
        try:
            endpoint = await aresolve_endpoint_bearer(scope, slug)
        except BearerRejected as rejected:
            raise unauthorized(scope, slug, rejected.presented) from None
    if not endpoint.allows(Verb.A2A):
        raise frontdoor.Refused(
            403, frontdoor.FORBIDDEN, "this endpoint's verbs do not include a2a"
        )
    return endpoint


async def application(scope: Scope, receive: Receive, send: Send) -> None:
    match = _PATH.match(scope.get("path", ""))
    if match is None:
        await send_error(send, 404, "no endpoint in the path: use /a2a/{slug}")
        return
    slug, rest = match.group(1), match.group(2) or "/"
    current = await runtime_settings.acurrent_or_defaults()
    try:
        admitted = await frontdoor.admit(
            DOOR,
            scope,
            current,
            lambda scope: _a2a_caller(scope, slug),
            endpoint_key=lambda endpoint: str(endpoint.id),
        )
        endpoint = admitted.caller
        body = await frontdoor.read_body(DOOR, scope, receive)
    except frontdoor.Refused as refused:
        await frontdoor.send_refusal(send, DOOR, refused)
        return
    except DatabaseError:
        logger.exception("a2a: database error resolving the bearer")
        await send_error(send, 503, "the database is unavailable", code=INTERNAL_ERROR)
        return
    except asgi.ClientDisconnected:
        return
    refusal = refuse_unstorable(body) or refuse_unknown_status(body)
    if refusal is not None:
        await _send_body(send, 200, refusal)
        return
    if rest == AGENT_CARD_WELL_KNOWN_PATH:
        served = await dbthread.run(
            card.endpoint_card, endpoint, _base_url(scope, slug), oauth.origin_of(scope)
        )
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
