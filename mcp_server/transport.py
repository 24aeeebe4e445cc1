"""``/mcp/{slug}``: the ASGI entry in front of the SDK's Streamable HTTP session manager.

In order, before the SDK sees a request: the path names an endpoint; Host and Origin pass
``ALLOWED_HOSTS`` (DNS-rebinding protection, the transport spec's MUST); then the front door's
admission (``switchboard/lib/frontdoor.py``, configured by ``DOOR``): the client address is
under its rate (429 with ``Retry-After``); the bearer resolves to that endpoint
(``switchboard.auth``, 401 otherwise); the endpoint is under its rate (a ``tools/call`` over it
is answered by the tool error ``rate_limited``, so the model reads why; any other request is 429
with ``Retry-After``); a legacy GET with a session id becomes the doorbell's SSE stream
(``legacy_stream``), anything else must be POST; the body fits ``SWITCHBOARD_MAX_BODY_BYTES``
(413; the server refuses a declared over-cap body before the application runs, in the same
JSON-RPC shape); it is JSON and one JSON-RPC 2.0 message (the right JSON-RPC
error otherwise, the same in both eras). For the legacy era it also mints the session id on
``initialize`` and checks it on later requests (``mcp_server.sessions``). The endpoint and the
session go into the scope for the handlers (``mcp_server.server``), and the request goes to the
one shared session manager; a stateless-era ``tools/call`` is answered first, the SDK's way
without its pipeline, by ``mcp_server.fastpath`` when it fully understands it.

Everything that leaves is JSON: the SDK answers a few refusals (406, its own 400/413) in plain
text or with an empty body, and those are rewritten as JSON-RPC errors; an exception that
escapes, or a request that got no response at all, becomes a JSON-RPC internal error. Nothing
from here is a 500 or an HTML page: the 2026 spec maps an internal error to HTTP 200 (the SDK's
own table leaves -32603 unmapped), and this follows it, logging the cause for operators.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types
from django.conf import settings
from django.db import DatabaseError
from django.http.request import split_domain_port
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcp_server import doorbell, fastpath, sessions, taskwire, verbs
from mcp_server import server as mcp
from switchboard import oauth, runtime_settings
from switchboard.auth import BearerRejected, aresolve_endpoint_bearer, bearer_token
from switchboard.credentials import hash_key
from switchboard.lib import asgi, dbthread, frontdoor, oauth_scopes, todowatch
from switchboard.lib.asgi import Message, Receive, Scope, Send
from switchboard.models import Endpoint, Verb

logger = logging.getLogger(__name__)


PREFIX = "/mcp"
# /mcp/{slug} takes keys and advertises no OAuth; /mcp/{slug}/oauth takes OAuth tokens only.
_PATH = re.compile(r"^/mcp/([^/]+?)(/oauth)?/?$")
SESSION_HEADER = b"mcp-session-id"
PROTOCOL_VERSION_HEADER = b"mcp-protocol-version"


class Refused(Exception):
    """A request refused before the SDK saw it: an HTTP status and a JSON-RPC error."""

    def __init__(
        self,
        status: int,
        message: str,
        code: int = types.INVALID_REQUEST,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.headers = headers or {}


def _error_body(code: int, message: str, request_id: Any = None, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


async def send_error(
    send: Send,
    status: int,
    code: int,
    message: str,
    *,
    request_id: Any = None,
    headers: dict[str, str] | None = None,
) -> None:
    body = _error_body(code, message, request_id)
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


# --- Host and Origin ---------------------------------------------------------------------------


host_allowed = frontdoor.host_allowed


_DEFAULT_PORTS = {"http": "80", "https": "443"}


def origin_allowed(origin: str | None, host: str | None) -> bool:
    """A browser's Origin must name an allowed host on the port the request came to (or be a
    CSRF-trusted origin); absent is fine.

    Only browsers send Origin; agents and SDK clients do not. A page on another site that makes
    a visitor's browser call this server (the DNS-rebinding case the spec worries about) sends
    its own origin and is refused here, before its request is authenticated. The port counts:
    another local service (``http://localhost:9999``) is another origin than this server on
    :8000, so it must be listed in ``CSRF_TRUSTED_ORIGINS`` to pass. ``host`` is the request's
    Host header, which a browser always sends with the port it connected to.
    """
    if origin is None:
        return True
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    try:
        parts = urlsplit(origin)
        origin_port = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.netloc or not host:
        return False  # includes the opaque origin "null"
    # A port written out that is the scheme's default is the same origin as no port at all.
    given = str(origin_port) if origin_port is not None else ""
    if given == _DEFAULT_PORTS[parts.scheme]:
        given = ""
    _domain, host_port = split_domain_port(host)
    if host_port in _DEFAULT_PORTS.values() and not given:
        host_port = ""
    return given == host_port and host_allowed(parts.netloc)


# --- the body ----------------------------------------------------------------------------------


def too_large_message(limit: int) -> str:
    return f"Request body too large (limit {limit} bytes)"


def _door_message(refused: frontdoor.Refused) -> str:
    """A refusal at the door in the words of the rest of this transport."""
    if refused.reason == frontdoor.TOO_LARGE and refused.limit is not None:
        return too_large_message(refused.limit)
    if refused.reason in (frontdoor.RATE_ADDRESS, frontdoor.RATE_ENDPOINT):
        return f"Too Many Requests: retry after {refused.retry_after} s"
    return f"{HTTPStatus(refused.status).phrase}: {refused.message}"


def encode_refusal(refused: frontdoor.Refused, _content_type: str | None) -> tuple[str, bytes]:
    """A refusal at the door (or the server's, before the body is read) as a JSON-RPC error
    with no id: the request's id is unknown until its body is read."""
    return "application/json", _error_body(types.INVALID_REQUEST, _door_message(refused))


DOOR = frontdoor.Door(
    name="mcp",
    cap=lambda: int(settings.SWITCHBOARD_MAX_BODY_BYTES),
    encode=encode_refusal,
    rate_per_address="mcp_rate_per_address",
    rate_per_endpoint="mcp_rate_per_endpoint",
    check_host=False,  # _serve checks it first, then the Origin against it
)


def check_message(body: bytes) -> dict[str, Any]:
    """Decode ``body`` as one JSON-RPC 2.0 message, or refuse it with the JSON-RPC error.

    The SDK checks this too, but its two eras answer differently (the legacy path calls a batch
    "invalid params"); checking here gives one answer per mistake, whichever era a client speaks.
    """
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        raise Refused(400, "Parse error: the body is not JSON", types.PARSE_ERROR) from None
    if isinstance(message, list):
        raise Refused(400, "Batches are not supported: send one JSON-RPC message per request")
    if not isinstance(message, dict):
        raise Refused(400, "The body must be a JSON-RPC 2.0 message object")
    if message.get("jsonrpc") != "2.0":
        raise Refused(400, 'Not JSON-RPC 2.0: "jsonrpc" must be "2.0"')
    request_id = message.get("id")
    if "id" in message and (isinstance(request_id, bool) or not isinstance(request_id, str | int)):
        raise Refused(400, '"id" must be a string or an integer')
    if "method" in message:
        if not isinstance(message["method"], str) or not message["method"]:
            raise Refused(400, '"method" must be a non-empty string')
        if "params" in message and not isinstance(message["params"], dict):
            raise Refused(400, '"params" must be an object', types.INVALID_PARAMS)
    elif "id" not in message or ("result" not in message and "error" not in message):
        raise Refused(400, "Neither a request, a notification nor a response")
    return message


def is_modern(scope: Scope) -> bool:
    """The SDK's era rule: a protocol-version header that is not a handshake version is modern."""
    version = asgi.header(scope, PROTOCOL_VERSION_HEADER)
    return version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS


# --- responses ---------------------------------------------------------------------------------


class ResponseGuard:
    """Wraps ``send``: adds headers to the SDK's response, and rewrites what must not leave.

    A refusal (status ≥ 400) without a JSON body becomes a JSON-RPC error carrying the SDK's
    text; a 500 becomes a JSON-RPC internal error at HTTP 200. Everything else passes through
    untouched, streams included.
    """

    def __init__(self, send: Send, request_id: Any = None) -> None:
        self._send = send
        self.request_id = request_id
        self.extra_headers: list[tuple[bytes, bytes]] = []
        self.started = False
        self._held: Message | None = None
        self._held_body: list[bytes] = []

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
            status = int(message["status"])
            headers = list(message.get("headers") or ())
            ctype = next((bytes(v) for k, v in headers if bytes(k).lower() == b"content-type"), b"")
            if status >= 500 or (status >= 400 and not ctype.startswith(b"application/json")):
                self._held = message
                return
            if status < 300:
                headers.extend(self.extra_headers)
            await self._send({**message, "headers": headers})
            return
        if message["type"] == "http.response.body" and self._held is not None:
            self._held_body.append(message.get("body", b""))
            if not message.get("more_body", False):
                await self._rewrite()
            return
        await self._send(message)

    async def _rewrite(self) -> None:
        assert self._held is not None
        status = int(self._held["status"])
        text = b"".join(self._held_body).decode("utf-8", "replace").strip()
        self._held, self._held_body = None, []
        if status >= 500:
            logger.error("MCP transport answered %s: %s", status, text[:200])
            await send_error(
                self._send, 200, types.INTERNAL_ERROR, "Internal error", request_id=self.request_id
            )
            return
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Error"
        message = f"{phrase}: {text[:200]}" if text and text.isprintable() else phrase
        allow = {"Allow": "POST"} if status == 405 else None
        await send_error(
            self._send,
            status,
            types.INVALID_REQUEST,
            message,
            request_id=self.request_id,
            headers=allow,
        )

    async def finish(self) -> None:
        """Make sure exactly one complete response left, whatever the inner app did."""
        if self._held is not None:
            await self._rewrite()
        elif not self.started:
            logger.error("MCP request ended without a response")
            await send_error(
                self._send, 200, types.INTERNAL_ERROR, "Internal error", request_id=self.request_id
            )


# --- the app -----------------------------------------------------------------------------------


async def _endpoint(scope: Scope, slug: str) -> Endpoint:
    try:
        return await aresolve_endpoint_bearer(scope, slug)
    except BearerRejected as rejected:
        raise rejected.refusal() from None
    except DatabaseError:
        logger.exception("MCP: could not authenticate, database unavailable")
        raise Refused(
            503, "Service unavailable: try again", types.INTERNAL_ERROR, {"Retry-After": "1"}
        ) from None


def _oauth_refusal(scope: Scope, slug: str, presented: bool) -> frontdoor.Refused:
    """401 at the OAuth URL: the challenge names the resource's metadata by absolute URL and
    the scopes (RFC 9728 §5.1), with ``invalid_token`` when a token was presented."""
    header = oauth.challenge(
        oauth.origin_of(scope),
        oauth.MCP,
        slug,
        oauth_scopes.ALL,
        "invalid_token" if presented else None,
    )
    return frontdoor.Refused(
        401,
        frontdoor.UNAUTHORIZED,
        "missing or invalid access token for this resource",
        headers={"WWW-Authenticate": header},
    )


async def _token_caller(scope: Scope, slug: str) -> oauth.TokenGrant:
    try:
        return await oauth.aresolve_token(
            scope, oauth.resource_url(oauth.origin_of(scope), oauth.MCP, slug)
        )
    except oauth.TokenRejected as rejected:
        raise _oauth_refusal(scope, slug, rejected.presented) from None
    except DatabaseError:
        logger.exception("MCP: could not check the access token, database unavailable")
        raise Refused(
            503, "Service unavailable: try again", types.INTERNAL_ERROR, {"Retry-After": "1"}
        ) from None


def needed_scope(message: dict[str, Any], grant: oauth.TokenGrant) -> str | None:
    """The scope a token lacks for this message, when its endpoint would allow it: the verb a
    tool rides on (``submit_todo`` and the MCP App's tools ride on ``submit``:
    ``verbs.verb_of``), reading resources (``todos:read``), or MCP Tasks' ``tasks/*`` methods
    (``submit``: a task is a todo the caller submitted, ``verbs.can_submit``). None when the
    token may, or when the endpoint itself may not (then the usual answer says so)."""
    method = message.get("method")
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    if method == "tools/call":
        name = params.get("name") if isinstance(params, dict) else None
        return grant.missing_scope(verbs.verb_of(name)) if isinstance(name, str) else None
    if method in ("resources/read", "resources/subscribe"):
        return grant.missing_scope(Verb.GET_TODO)
    if isinstance(method, str) and method.startswith("tasks/"):
        return grant.missing_scope(Verb.SUBMIT)
    return None


def insufficient_scope(scope: Scope, slug: str, needed: str) -> Refused:
    """403 for step-up (RFC 6750 §3.1): one challenge naming the scope the call needs."""
    header = (
        f'Bearer error="insufficient_scope", scope="{needed}", '
        f'resource_metadata="{oauth.metadata_url(oauth.origin_of(scope), oauth.MCP, slug)}", '
        f'error_description="this call needs the {needed} scope"'
    )
    return Refused(
        403,
        f"Forbidden: insufficient_scope: this call needs the {needed} scope",
        headers={"WWW-Authenticate": header},
    )


def _endpoint_key(endpoint: Endpoint) -> str:
    return str(endpoint.id)


def _too_many(retry_after: int) -> Refused:
    return Refused(
        429,
        f"Too Many Requests: retry after {retry_after} s",
        headers={"Retry-After": str(retry_after)},
    )


async def _serve(scope: Scope, receive: Receive, guard: ResponseGuard) -> None:
    match = _PATH.match(scope.get("path", ""))
    if match is None:
        raise Refused(404, "Not Found: MCP endpoints live at /mcp/{endpoint-slug}")
    slug, with_oauth = match.group(1), match.group(2) is not None
    host = asgi.header(scope, b"host")
    if not host_allowed(host):
        raise Refused(421, "Misdirected Request: Host is not in ALLOWED_HOSTS")
    if not origin_allowed(asgi.header(scope, b"origin"), host):
        raise Refused(403, "Forbidden: Origin is not allowed")
    rates = await runtime_settings.acurrent_or_defaults()
    grant: oauth.TokenGrant | None = None
    if with_oauth:
        admitted_grant = await frontdoor.admit(
            DOOR,
            scope,
            rates,
            lambda scope: _token_caller(scope, slug),
            endpoint_key=lambda grant: str(grant.endpoint.id),
            defer_endpoint_rate=True,
        )
        grant = admitted_grant.caller
        endpoint, endpoint_wait = grant.endpoint, admitted_grant.endpoint_wait
    else:
        admitted = await frontdoor.admit(
            DOOR,
            scope,
            rates,
            lambda scope: _endpoint(scope, slug),
            endpoint_key=_endpoint_key,
            defer_endpoint_rate=True,  # a tools/call over it gets the tool error (below)
        )
        endpoint, endpoint_wait = admitted.caller, admitted.endpoint_wait
    # Whose submissions tasks/list shows: a key's own; an OAuth client's across its refreshes.
    token = bearer_token(scope)
    key_digest = (
        grant.requester if grant is not None else hash_key(token) if token is not None else None
    )

    if (
        scope.get("method") == "GET"
        and not is_modern(scope)
        and asgi.header(scope, SESSION_HEADER) is not None
    ):
        if endpoint_wait is not None:
            raise _too_many(endpoint_wait)
        await legacy_stream(scope, receive, guard, endpoint, key_digest)
        return
    if scope.get("method") != "POST":
        # Modern MCP is POST only (its GET gets 405, as the 2026 spec asks), and so is a GET
        # without a legacy session: it names no stream to open. Legacy clients end a session by
        # forgetting it (DELETE is 405, which the legacy spec allows).
        raise Refused(405, "Method Not Allowed: use POST", headers={"Allow": "POST"})
    try:
        body = await frontdoor.read_body(DOOR, scope, receive)
    except asgi.ClientDisconnected:
        raise Refused(400, "Client disconnected") from None
    ctype = (asgi.header(scope, b"content-type") or "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise Refused(415, "Unsupported Media Type: send Content-Type: application/json")
    message = check_message(body)
    guard.request_id = message.get("id")
    if grant is not None and (needed := needed_scope(message, grant)) is not None:
        # Before the fast path and the SDK: a token never reaches a verb its scopes lack.
        raise insufficient_scope(scope, slug, needed)
    if endpoint_wait is not None and message.get("method") != "tools/call":
        raise _too_many(endpoint_wait)

    session: str | None = None
    modern = is_modern(scope)
    if not modern:
        if message.get("method") == "initialize":
            session = sessions.mint(endpoint.id)
            guard.extra_headers.append((SESSION_HEADER, session.encode("ascii")))
        elif (presented := asgi.header(scope, SESSION_HEADER)) is not None:
            if not sessions.is_valid(presented, endpoint.id):
                # The transport spec's answer to an unknown session; the client re-initializes.
                raise Refused(404, "Session not found")
            session = presented
    # A modern request's Mcp-Session-Id is ignored (the 2026 spec), so it never labels a claim.
    if await taskwire.answer(
        scope,
        receive,
        message,
        endpoint=endpoint,
        modern=modern,
        session=session,
        key_digest=key_digest,
        retry_after=endpoint_wait,
        send=guard.send,
    ):
        return  # MCP Tasks: the tasks/* methods and task-creating calls (mcp_server/tasks.py)
    if modern and await fastpath.answer(
        scope, message, endpoint, endpoint_wait, guard.send, key_digest
    ):
        return  # a stateless tools/call, answered as the SDK would, without its pipeline

    # A tools/call over the endpoint's rate reaches the handler, which answers it with the
    # rate_limited tool error (mcp_server.server.call_tool).
    inner: Scope = {
        **scope,
        mcp.SCOPE_ENDPOINT: endpoint,
        mcp.SCOPE_SESSION: session,
        mcp.SCOPE_RETRY_AFTER: endpoint_wait,
        mcp.SCOPE_KEY_DIGEST: key_digest,
    }
    manager = await mcp.RUNTIME.manager()
    await manager.handle_request(inner, asgi.replay(body, receive), guard.send)


# --- the legacy GET stream (the doorbell for 2025-era clients) ----------------------------------

KEEPALIVE_SECONDS = 15.0
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),  # proxies must pass each ring on at once
]


def _sse_notification(uri: str) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": uri},
    }
    return b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n"


async def legacy_stream(
    scope: Scope,
    receive: Receive,
    guard: ResponseGuard,
    endpoint: Endpoint,
    key_digest: bytes | None,
) -> None:
    """The 2025-11-25 GET stream: ``notifications/resources/updated`` for the session's queues,
    and ``notifications/tasks/status`` for the tasks its requester (``key_digest``: the key, or
    the OAuth grant) submitted (endpoints with ``submit``: ``mcp_server.taskwire.LegacyFollower``).

    Keyed by the signed session id, so any process can serve it: the session's subscriptions
    are read from the database at each ring (``mcp_server.doorbell``), whichever process took
    the ``resources/subscribe``. It carries nothing else (no responses ride it in stateless
    mode), has no event ids (nothing is replayed: a client that reconnects reads the queue
    again), sends a ``:`` comment every 15 s so idle proxies keep it open, and ends when the
    client disconnects.
    """
    accept = (asgi.header(scope, b"accept") or "").lower()
    if "text/event-stream" not in accept:
        raise Refused(406, "Not Acceptable: the GET stream needs Accept: text/event-stream")
    session = asgi.header(scope, SESSION_HEADER)
    if session is None or not sessions.is_valid(session, endpoint.id):
        raise Refused(404, "Session not found")
    await mcp.RUNTIME.manager()  # starts the doorbell with the session manager
    follower = (
        taskwire.LegacyFollower(endpoint, key_digest)
        if key_digest is not None and verbs.can_submit(endpoint)
        else None
    )
    with doorbell.DOORBELL.open(endpoint.id, session_id=session) as stream:

        async def watch_disconnect() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            stream.close()

        loop = asyncio.get_running_loop()
        watcher = loop.create_task(watch_disconnect())
        followed: tuple[str, ...] = ()
        following = contextlib.ExitStack()
        changed: asyncio.Event | None = None
        try:
            try:
                await dbthread.run(doorbell.touch, session)
            except DatabaseError:  # the stream still works; only the pruning clock is stale
                logger.warning("MCP GET stream: could not refresh the session's subscriptions")
            await guard.send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            await guard.send(
                {"type": "http.response.body", "body": b": listening\n\n", "more_body": True}
            )
            owed: list[dict[str, Any]] = []
            if follower is not None:
                followed, owed = await _follow(follower)
            while not stream.closed:
                if follower is not None and (
                    changed is None or set(followed) != set(follower.last)
                ):
                    following.close()
                    following = contextlib.ExitStack()
                    # Set at the start: a change between the read and this registration is
                    # read at once rather than missed.
                    changed = following.enter_context(todowatch.following_all(follower.last))
                    followed = tuple(follower.last)
                body = b"".join(_sse_message(message) for message in owed)
                owed = []
                if not body:
                    uris = await _wait(stream, changed)
                    if follower is not None:
                        followed, owed = await _follow(follower)
                    body = (
                        b"".join(
                            [
                                *(_sse_notification(uri) for uri in uris),
                                *(_sse_message(message) for message in owed),
                            ]
                        )
                        or b": keep-alive\n\n"
                    )
                    owed = []
                if stream.closed:
                    break
                await guard.send({"type": "http.response.body", "body": body, "more_body": True})
            await guard.send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            following.close()
            watcher.cancel()


async def _follow(
    follower: taskwire.LegacyFollower,
) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    try:
        return await dbthread.run(follower.step)
    except DatabaseError:  # the stream goes on; the next wake reads again
        logger.warning("MCP GET stream: could not read the session's tasks")
        return tuple(follower.last), []


async def _wait(stream: doorbell.Stream, changed: asyncio.Event | None) -> list[str]:
    """The stream's rung URIs, waiting at most the keep-alive; a change of a followed task
    ends the wait early (with no URIs)."""
    if changed is None:
        return await stream.wait(KEEPALIVE_SECONDS)
    loop = asyncio.get_running_loop()
    rung = loop.create_task(stream.wait(KEEPALIVE_SECONDS))
    woken = loop.create_task(changed.wait())
    await asyncio.wait({rung, woken}, return_when=asyncio.FIRST_COMPLETED)
    woken.cancel()
    changed.clear()
    if rung.done():
        return rung.result()
    rung.cancel()
    return []


def _sse_message(message: dict[str, Any]) -> bytes:
    payload = {"jsonrpc": "2.0", **message}
    return b"event: message\ndata: " + json.dumps(payload).encode() + b"\n\n"


async def application(scope: Scope, receive: Receive, send: Send) -> None:
    """The ASGI app for ``/mcp`` and everything under it."""
    guard = ResponseGuard(send)
    try:
        await _serve(scope, receive, guard)
    except Refused as refused:
        if not guard.started:
            await send_error(
                send,
                refused.status,
                refused.code,
                str(refused),
                request_id=guard.request_id,
                headers=refused.headers,
            )
        return
    except frontdoor.Refused as refused:
        if not guard.started:
            await frontdoor.send_refusal(send, DOOR, refused)
        return
    except Exception:
        logger.exception("MCP request failed")
        if guard.started:
            return  # the response is under way; nothing sensible can be added to it
    await guard.finish()
