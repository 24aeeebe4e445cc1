"""The front door: one route table for every HTTP surface, and one admission step they share.

A **door** is what a surface asks of every request before its own code runs: the name its rate
budgets and metrics go under, the runtime settings that hold its per-address and per-endpoint
rates, its body cap, and how it encodes a refusal (``encode``: a JSON-RPC error on ``/mcp`` and
``/a2a``, an OTLP ``google.rpc.Status`` on ``/otlp``, the hooks' JSON elsewhere). Each surface
module declares its door; ``switchboard/asgi.py`` puts them in one ``RouteTable`` (a row per
path prefix: the door and the ASGI app) that both its router and the server
(``switchboard/lib/server.py``, which refuses before the application runs) read, so a path
prefix is tested in one place and a refusal has one shape whoever sends it.

``admit`` is the admission step, in one order for every surface: the ``Host`` header names
this server (``ALLOWED_HOSTS``, as the Board's pages check it: 421 otherwise, so a DNS-rebound
name cannot reach an API nor be echoed back in an agent card), the client address under its
rate (429), the caller's credentials (``authenticate``, the surface's bearer resolution: 401,
403, 503), the endpoint under its rate (429, or handed back to the surface when it answers that
itself, as MCP's ``tools/call`` does), then the body under its cap (413, ``read_body``). It adds
no query of its own: the rates are the runtime settings the caller already holds, the counting
is ``switchboard/lib/limits.py``'s (memory or Redis) and the bearer's cost is the resolver's.

This module imports no app (the helpers' layer): the credentials step is a function the surface
passes, and the runtime settings are an object the surface read.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from switchboard.lib import asgi, limits, metrics
from switchboard.lib.asgi import Receive, Scope, Send

# Why a request was refused at the door; an encoder may phrase each in the surface's own words.
RATE_ADDRESS = "rate_address"
RATE_ENDPOINT = "rate_endpoint"
UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"
UNAVAILABLE = "unavailable"
TOO_LARGE = "too_large"
TOO_SLOW = "too_slow"  # the whole body did not arrive within its deadline (408)
TOO_MANY_BODIES = "too_many_bodies"  # the address already sends its most bodies at once (429)
MISDIRECTED = "misdirected"  # the Host header is not one of ALLOWED_HOSTS (421)


class Refused(Exception):
    """A request refused at the door: its HTTP status, why (one of the constants above), a
    message for people, the headers the answer carries (``Retry-After``, ``WWW-Authenticate``),
    and for a 413 the cap."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        limit: int | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.headers = headers or {}
        self.limit = limit
        self.retry_after = retry_after


def too_many(dimension: str, retry_after: int) -> Refused:
    where = "this address" if dimension == "address" else "this endpoint"
    return Refused(
        429,
        RATE_ADDRESS if dimension == "address" else RATE_ENDPOINT,
        f"too many requests ({where}); retry after {retry_after} s",
        headers={"Retry-After": str(retry_after)},
        retry_after=retry_after,
    )


def too_large(limit: int) -> Refused:
    return Refused(413, TOO_LARGE, f"the body is over the {limit}-byte limit", limit=limit)


def too_slow(seconds: float) -> Refused:
    return Refused(408, TOO_SLOW, f"the body did not arrive within {seconds:g} s")


def too_many_bodies(most: int) -> Refused:
    return Refused(
        429,
        TOO_MANY_BODIES,
        f"this address is already sending {most} request bodies; send one when another ends",
        headers={"Retry-After": "1"},
        retry_after=1,
    )


def misdirected() -> Refused:
    return Refused(421, MISDIRECTED, "Misdirected Request: Host is not in ALLOWED_HOSTS")


def _allowed_hosts() -> list[str]:
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:  # Django's own fallback in get_host()
        hosts = [".localhost", "127.0.0.1", "[::1]"]
    return hosts


def host_allowed(host: str | None) -> bool:
    """Whether ``host`` (a Host header's value) names this server, as Django's ``get_host``
    judges it for the Board."""
    if not host:
        return False
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, _allowed_hosts())


def require_host(scope: Scope) -> None:
    """Refuse (421) a request whose Host is not one of ``ALLOWED_HOSTS``."""
    if not host_allowed(asgi.header(scope, b"host")):
        raise misdirected()


# (the refusal, the request's Content-Type or None) -> (Content-Type, body) of the answer.
Encoder = Callable[[Refused, str | None], tuple[str, bytes]]


def encode_json(refused: Refused, _content_type: str | None) -> tuple[str, bytes]:
    """The plain JSON refusal (webhooks, the Board): ``{"error", "message"}`` and the cap."""
    body: dict[str, Any] = {"error": refused.reason, "message": refused.message}
    if refused.reason in (RATE_ADDRESS, RATE_ENDPOINT, TOO_MANY_BODIES):
        body["error"] = "rate_limited"
    if refused.limit is not None:
        body["limit"] = refused.limit
    return "application/json", json.dumps(body).encode()


@dataclass(frozen=True, slots=True)
class Door:
    """What a surface asks of a request before its own code runs (module docstring)."""

    name: str  # the rate budgets' and metrics' surface name: "mcp", "a2a", "otlp", "hooks"
    cap: Callable[[], int]  # the body cap, read when asked (tests override settings)
    encode: Encoder
    rate_per_address: str | None = None  # the runtime setting's name, or None: no such rate
    rate_per_endpoint: str | None = None
    # Whether ``admit`` checks the Host header first (``require_host``); MCP checks it itself,
    # before its Origin check.
    check_host: bool = True


async def send_refusal(
    send: Send, door: Door, refused: Refused, content_type: str | None = None
) -> None:
    """Answer ``refused`` in ``door``'s shape (a 413 closes the connection: the rest of the
    body is never read)."""
    kind, body = door.encode(refused, content_type)
    headers = [
        (b"content-type", kind.encode("latin-1")),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in refused.headers.items()),
    ]
    if refused.status == 413:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": refused.status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def hit(door: Door, dimension: str, key: str, per_minute: int) -> int | None:
    """Count one request against ``door``'s ``dimension`` budget for ``key``: None while within
    it, else the seconds until a request would pass (and the refusal is counted in metrics)."""
    verdict = await limits.limiter(settings.REDIS_URL).hit(door.name, dimension, key, per_minute)
    if verdict.allowed:
        return None
    metrics.rate_limited(door.name, dimension)
    return verdict.retry_after


@dataclass(slots=True)
class Admitted[T]:
    """What passed the door: the caller (None when the door authenticates no one), and when
    the surface asked to answer it itself, the seconds the endpoint is over its rate."""

    caller: T
    endpoint_wait: int | None = None


async def admit[T](
    door: Door,
    scope: Scope,
    rates: Any,
    authenticate: Callable[[Scope], Awaitable[T]],
    *,
    endpoint_key: Callable[[T], str],
    defer_endpoint_rate: bool = False,
) -> Admitted[T]:
    """Admit a request to ``door`` or raise ``Refused``: the address's rate, then
    ``authenticate`` (which raises ``Refused`` itself), then the endpoint's rate (handed back in
    ``endpoint_wait`` when ``defer_endpoint_rate``). ``rates`` is the runtime settings object
    the surface read; the body is the surface's next step (``read_body``), after any checks of
    its own that need no body."""
    if door.check_host:
        require_host(scope)
    if door.rate_per_address is not None:
        per_minute = getattr(rates, door.rate_per_address)
        wait = await hit(door, "address", limits.client_address(scope), per_minute)
        if wait is not None:
            raise too_many("address", wait)
    caller = await authenticate(scope)
    admitted = Admitted(caller)
    if door.rate_per_endpoint is not None:
        per_minute = getattr(rates, door.rate_per_endpoint)
        wait = await hit(door, "endpoint", endpoint_key(caller), per_minute)
        if wait is not None:
            if not defer_endpoint_rate:
                raise too_many("endpoint", wait)
            admitted.endpoint_wait = wait
    return admitted


async def admit_address(door: Door, scope: Scope, rates: Any) -> None:
    """The door of a surface that authenticates no one here (webhooks: their signature is
    checked with the source): the Host, then the address's rate alone."""
    if door.check_host:
        require_host(scope)
    if door.rate_per_address is not None:
        per_minute = getattr(rates, door.rate_per_address)
        wait = await hit(door, "address", limits.client_address(scope), per_minute)
        if wait is not None:
            raise too_many("address", wait)


async def read_body(door: Door, scope: Scope, receive: Receive) -> bytes:
    """The whole body under ``door``'s cap (``Refused`` 413 as soon as it is known to be over);
    ``asgi.ClientDisconnected`` when the client went away first."""
    limit = door.cap()
    try:
        return await asgi.read_body(scope, receive, limit)
    except asgi.BodyTooLarge:
        raise too_large(limit) from None


# --- the route table ------------------------------------------------------------------------

App = Callable[..., Awaitable[None]]  # an ASGI app (scope, receive, send)


@dataclass(frozen=True, slots=True)
class Route:
    """A row of the route table: requests to ``prefix`` (the path itself or under it) go to
    ``app`` through ``door``."""

    prefix: str
    door: Door
    app: App

    def matches(self, path: str) -> bool:
        return path.startswith(self.prefix) and (
            len(path) == len(self.prefix) or path[len(self.prefix)] == "/"
        )


@dataclass(frozen=True, slots=True)
class RouteTable:
    """Every HTTP surface, a row each, and the row for everything else (Django).

    ``body_seconds`` and ``bodies_per_address`` bound slow uploads in the server: the whole
    body must arrive within that many seconds (408), and one client address may be sending at
    most that many bodies at once (429); 0 switches either off. ``uncounted`` names peers whose
    bodies are not counted (a trusted proxy speaks for many clients).
    """

    routes: Sequence[Route]
    default: Route
    body_seconds: float = 0.0
    bodies_per_address: int = 0
    uncounted: Callable[[str], bool] = field(default=lambda _address: False)

    def route(self, path: str) -> Route:
        for route in self.routes:
            if route.matches(path):
                return route
        return self.default

    def refusal(self, path: str, refused: Refused, content_type: str | None) -> bytes:
        """The whole HTTP/1.1 answer to ``refused`` for ``path``, status line to body, in the
        path's surface's shape, closing the connection (the server's refusals, sent before any
        application runs)."""
        kind, body = self.route(path).door.encode(refused, content_type)
        extra = "".join(f"{name}: {value}\r\n" for name, value in refused.headers.items())
        head = (
            f"HTTP/1.1 {refused.status} {HTTPStatus(refused.status).phrase}\r\n"
            f"Content-Type: {kind}\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Cache-Control: no-store\r\n"
            f"{extra}"
            "Connection: close\r\n\r\n"
        )
        return head.encode("latin-1") + body
