"""Forwarded client addresses and schemes, believed only from configured proxies.

A reverse proxy tells the server who the client was (``X-Forwarded-For``) and whether it spoke
HTTPS (``X-Forwarded-Proto``). Anyone can send those headers, so they are believed only when
the connection itself comes from an address in ``SWITCHBOARD_TRUSTED_PROXIES``. daphne's own
``--proxy-headers`` believes them from any peer, which would let a client choose the address
its rate limits are counted under; so daphne runs without it and ``ForwardedMiddleware``
wraps the whole ASGI application (Django, ``/mcp``, ``/otlp``, ``/hooks``) instead.

From a trusted peer the middleware rewrites the scope's ``client`` (Django's ``REMOTE_ADDR``)
to the nearest address in ``X-Forwarded-For`` that is not itself a trusted proxy, and its
``scheme`` to ``X-Forwarded-Proto``. From any other peer it removes the forwarding headers,
so nothing downstream (Django's ``SECURE_PROXY_SSL_HEADER`` included) can read them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from typing import Any

from django.core.exceptions import ImproperlyConfigured

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_FORWARDED_FOR = b"x-forwarded-for"
_FORWARDED_PROTO = b"x-forwarded-proto"
# Dropped from untrusted peers: what a proxy says about the client, none of it provable.
_FORWARDING_HEADERS = frozenset(
    {_FORWARDED_FOR, _FORWARDED_PROTO, b"x-forwarded-host", b"x-forwarded-port", b"forwarded"}
)
# The scope key that keeps the connection's own address once ``client`` names the real client.
PEER_KEY = "switchboard.peer"
# Set on a scope whose forwarding headers came from an untrusted peer and were dropped: the peer
# may be a proxy nobody configured, and then its address is not the client's.
FORWARDED_UNTRUSTED_KEY = "switchboard.forwarded_untrusted"


def parse_networks(items: Iterable[str], *, setting: str) -> tuple[Network, ...]:
    """Read addresses and CIDRs (``10.0.0.1``, ``10.0.0.0/8``, ``::1``); raise on a bad one."""
    networks: list[Network] = []
    for item in items:
        try:
            networks.append(ipaddress.ip_network(item.strip(), strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"{setting} must list IP addresses or CIDRs, not {item!r}"
            ) from None
    return tuple(networks)


def address_in(address: str | None, networks: Sequence[Network]) -> bool:
    """Whether ``address`` (an IP, possibly IPv4-mapped IPv6) lies in one of ``networks``."""
    if not address or not networks:
        return False
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in network for network in networks)


def _header(headers: Sequence[tuple[bytes, bytes]], name: bytes) -> str | None:
    values = [value.decode("latin-1") for key, value in headers if key.lower() == name]
    return ",".join(values) if values else None


def forwarded_client(
    peer: str, forwarded_for: str | None, trusted: Sequence[Network]
) -> str | None:
    """The client behind a trusted ``peer``: the rightmost ``X-Forwarded-For`` entry that is not
    a trusted proxy (entries left of it were written by the client and prove nothing)."""
    if forwarded_for is None:
        return None
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not address_in(hop, trusted):
            return hop
    return hops[0] if hops else None


class ForwardedMiddleware:
    """ASGI middleware: believe forwarding headers from trusted peers only (module docstring)."""

    def __init__(self, app: Any, trusted: Sequence[Network]) -> None:
        self.app = app
        self.trusted = tuple(trusted)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = list(scope.get("headers") or [])
        client = scope.get("client")
        peer = str(client[0]) if client and client[0] else None
        if address_in(peer, self.trusted):
            scope = dict(scope)
            scope[PEER_KEY] = peer
            real = forwarded_client(peer or "", _header(headers, _FORWARDED_FOR), self.trusted)
            if real is not None:
                scope["client"] = (real, 0)
            proto = (_header(headers, _FORWARDED_PROTO) or "").split(",")[0].strip().lower()
            if proto in ("http", "https"):
                ws = scope["type"] == "websocket"
                scope["scheme"] = {"http": "ws", "https": "wss"}[proto] if ws else proto
        elif any(key.lower() in _FORWARDING_HEADERS for key, _ in headers):
            scope = dict(scope)
            scope["headers"] = [(k, v) for k, v in headers if k.lower() not in _FORWARDING_HEADERS]
            scope[FORWARDED_UNTRUSTED_KEY] = True
        await self.app(scope, receive, send)


def remote_addr(request: Any) -> str | None:
    """The client's address as the middleware left it (django-axes' AXES_CLIENT_IP_CALLABLE):
    never a forwarding header read again, which any client could write."""
    address = request.META.get("REMOTE_ADDR")
    return str(address) if address else None
