"""Outgoing signed webhooks: the signature, and a POST that cannot be pointed at the inside.

The signature is the scheme Stripe and Standard Webhooks receivers already verify:
``Switchboard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`` keyed by the
secret's UTF-8 bytes (docs/guides/push-rings.md has a verifier to copy).

SSRF: a push URL is chosen by whoever administers an endpoint, and the server posts to it, so a
URL naming a private, loopback, link-local or otherwise non-global address would let an endpoint
owner probe the server's own network. ``post`` resolves the host once, refuses the target when
any address it resolves to is not global (unless ``allow_private``), and connects to the address
it checked (not the name again, so a DNS answer that changes between the check and the connect
cannot slip an inside address through), sending the original name as the Host header and, for
https, as the TLS server name the certificate is checked against. Redirects are not followed.
A URL carrying credentials (``user:pass@``) is refused too: a receiver is authenticated by the
signature, and a secret in a URL ends up in logs and on the Board.

Not global, for this guard: whatever ``ipaddress`` does not call global, multicast, and an IPv6
address that carries an IPv4 one, judged by the IPv4 address inside (IPv4-mapped
``::ffff:a.b.c.d``, IPv4-compatible ``::a.b.c.d``, NAT64 ``64:ff9b::/96`` and its local-use
``64:ff9b:1::/48``, 6to4 ``2002::/16``): otherwise ``64:ff9b::7f00:1`` reaches 127.0.0.1 on a
network with a NAT64 gateway.

Time: ``timeout`` bounds the whole exchange (connect, send, and reading the answer), not each
read, so a receiver that trickles its answer a byte at a time cannot hold the sender longer than
``timeout``: a watchdog shuts the socket at the deadline.

``get`` is the same guard for a GET whose answer is read (OAuth client metadata documents,
``switchboard/oauth.py``): https only when asked, the body read up to a cap and refused past it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from switchboard.lib.text import whole_number

SIGNATURE_HEADER = "Switchboard-Signature"
RESPONSE_READ_BYTES = 4096  # what is read of an answer before it is dropped


# The setting that lets pushes go to inside addresses (switchboard/settings.py), named in the
# refusal so an operator trying a local agent learns what to set; a caller guarding another
# kind of URL names its own (``private_setting``).
PRIVATE_SETTING = "SWITCHBOARD_PUSH_ALLOW_PRIVATE"


class TargetRefused(Exception):
    """The URL may not be posted to: not http(s) (``kind`` "url"), unresolvable
    ("unresolved"), or an inside address ("private")."""

    def __init__(self, message: str, kind: str = "url") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    duration_ms: int


@dataclass(frozen=True, slots=True)
class Fetched:
    """A GET's answer: its status, its headers (names lowercased) and its body."""

    status: int
    headers: dict[str, str]
    body: bytes


class TooLarge(Exception):
    """The answer's body is over the cap the caller set."""


def signature(secret: str, body: bytes, timestamp: int) -> str:
    """The ``Switchboard-Signature`` header value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries to the IPv4 internet, if it carries one."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in net for net in _NAT64) or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    return None


def is_global(address: str) -> bool:
    """Whether the guard lets a push reach ``address`` (see the module docstring)."""
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(
        address.split("%", 1)[0]
    )
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            ip = inner
    return ip.is_global and not ip.is_multicast


def resolve(
    url: str, *, allow_private: bool, private_setting: str = PRIVATE_SETTING
) -> tuple[str, str, int, str, str]:
    """Check ``url`` and resolve its host once: (scheme, host, port, address, path).

    Raise ``TargetRefused`` for anything but http(s), a host that does not resolve, or one that
    resolves to any non-global address while ``allow_private`` is off (naming
    ``private_setting``, the setting that turns it on).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetRefused("the push URL must be http:// or https:// with a host")
    if parts.username is not None or parts.password is not None:
        raise TargetRefused("the push URL must not carry a user name or password")
    host = parts.hostname
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise TargetRefused("the push URL's port is not a number") from None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise TargetRefused(f"cannot resolve {host}: {exc}", "unresolved") from None
    addresses = [str(info[4][0]) for info in infos]
    if not addresses:
        raise TargetRefused(f"cannot resolve {host}", "unresolved")
    if not allow_private and not all(is_global(a) for a in addresses):
        # The push setting is read by each process that checks a URL: the server's, and a
        # manage.py command's (create_endpoint, alert channel add, alert test) in its own.
        where = (
            "in the environment of the server and of manage.py commands"
            if private_setting == PRIVATE_SETTING
            else "on the server"
        )
        raise TargetRefused(
            f"{host} resolves to a private, loopback or link-local address; set"
            f" {private_setting}=true {where} to allow it (an agent on this machine or"
            " network)",
            "private",
        )
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return parts.scheme, host, port, addresses[0], path


def check(url: str, *, allow_private: bool) -> None:
    """The sender's guard for a form or a command, before a URL is stored: raise
    ``TargetRefused`` exactly as ``post`` would, except for a host that does not resolve now
    (it may by the time a ring is sent, and each try resolves it again)."""
    try:
        resolve(url, allow_private=allow_private)
    except TargetRefused as exc:
        if exc.kind != "unresolved":
            raise


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to a resolved address, with SNI and certificate checks for the original name."""

    def __init__(
        self, address: str, port: int, server_name: str, timeout: float, context: ssl.SSLContext
    ) -> None:
        super().__init__(address, port, timeout=timeout, context=context)
        self._server_name = server_name
        self._tls = context

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._tls.wrap_socket(self.sock, server_hostname=self._server_name)


def _connect(
    url: str,
    *,
    timeout: float,
    allow_private: bool,
    context: ssl.SSLContext | None,
    private_setting: str = PRIVATE_SETTING,
) -> tuple[http.client.HTTPConnection, str, str]:
    """A connection to the checked address of ``url``, its Host header and its path."""
    scheme, host, port, address, path = resolve(
        url, allow_private=allow_private, private_setting=private_setting
    )
    default_port = 443 if scheme == "https" else 80
    host_header = host if port == default_port else f"{host}:{port}"
    if ":" in host and not host.startswith("["):
        host_header = f"[{host}]" if port == default_port else f"[{host}]:{port}"
    conn: http.client.HTTPConnection
    if scheme == "https":
        conn = _PinnedHTTPS(address, port, host, timeout, context or ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(address, port, timeout=timeout)
    return conn, host_header, path


def get(
    url: str,
    headers: dict[str, str],
    *,
    timeout: float,
    allow_private: bool,
    max_bytes: int,
    https_only: bool = False,
    context: ssl.SSLContext | None = None,
    private_setting: str = PRIVATE_SETTING,
) -> Fetched:
    """GET ``url`` through the same guard as ``post`` and read at most ``max_bytes`` of the
    answer (``TooLarge`` past it, from ``Content-Length`` or the bytes themselves).

    Raise ``TargetRefused`` before connecting to a refused target (and for http:// when
    ``https_only``); ``OSError`` or ``http.client.HTTPException`` when the exchange fails.
    """
    if https_only and urlsplit(url).scheme != "https":
        raise TargetRefused("the URL must be https://")
    conn, host_header, path = _connect(
        url,
        timeout=timeout,
        allow_private=allow_private,
        context=context,
        private_setting=private_setting,
    )
    try:
        conn.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host_header)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        declared = response.getheader("Content-Length")
        if (size := whole_number(declared or "")) is not None and size > max_bytes:
            raise TooLarge(f"the answer declares {declared} bytes, over {max_bytes}")
        body = response.read(max_bytes + 1)
        if len(body) > max_bytes:
            raise TooLarge(f"the answer is over {max_bytes} bytes")
        names = {name.lower(): value for name, value in response.getheaders()}
        return Fetched(response.status, names, body)
    finally:
        conn.close()


def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    timeout: float,
    allow_private: bool,
    context: ssl.SSLContext | None = None,
) -> Answer:
    """POST ``body`` to ``url`` (see the module docstring); return the status and duration.

    Raise ``TargetRefused`` before connecting to a refused target; ``OSError`` (timeouts
    included) or ``http.client.HTTPException`` when the exchange fails.
    """
    conn, host_header, path = _connect(
        url, timeout=timeout, allow_private=allow_private, context=context
    )
    started = time.monotonic()
    expired = threading.Event()

    def cut() -> None:
        expired.set()
        sock = conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    watchdog = threading.Timer(timeout, cut)
    watchdog.daemon = True
    watchdog.start()
    try:
        conn.putrequest("POST", path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host_header)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            conn.putheader(name, value)
        conn.endheaders(body)
        response = conn.getresponse()
        response.read(RESPONSE_READ_BYTES)
    except (OSError, http.client.HTTPException):
        if expired.is_set():
            raise TimeoutError(f"no whole answer within {timeout:g} s") from None
        raise
    finally:
        watchdog.cancel()
        conn.close()
    if expired.is_set():
        raise TimeoutError(f"no whole answer within {timeout:g} s")
    return Answer(response.status, int((time.monotonic() - started) * 1000))


@dataclass(slots=True)
class Tried:
    """One POST as the senders record it (push rings, alert messages): delivered on a 2xx;
    tried again on a timeout, a connection error, a 429 or a 5xx; a refused target fails."""

    delivered: bool = False
    retry: bool = False
    status_code: int | None = None
    duration_ms: int | None = None
    error: str = ""


def try_post(
    url: str, body: bytes, headers: dict[str, str], *, timeout: float, allow_private: bool
) -> Tried:
    """``post``, with its outcome classified (``Tried``); never raises for the receiver."""
    tried = Tried()
    started = time.monotonic()
    try:
        answer = post(url, body, headers, timeout=timeout, allow_private=allow_private)
    except TargetRefused as exc:
        tried.error = f"refused: {exc}"
    except (OSError, http.client.HTTPException) as exc:
        tried.retry = True
        tried.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        tried.duration_ms = int((time.monotonic() - started) * 1000)
    else:
        tried.status_code, tried.duration_ms = answer.status, answer.duration_ms
        tried.delivered = 200 <= answer.status < 300
        tried.retry = answer.status == 429 or answer.status >= 500
        if not tried.delivered:
            tried.error = f"HTTP {answer.status}"
    return tried
