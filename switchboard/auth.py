"""The endpoint bearer resolver: the one way an agent-facing surface learns who is calling.

MCP (``/mcp/{slug}``), the OTLP receiver (``/otlp/{slug}/v1/traces``) and A2A (``/a2a/{slug}``)
all authenticate the same way: ``Authorization: Bearer
sbk_…`` → the key's SHA-256 → a live key of a live endpoint → the endpoint, whose slug must be
the one in the URL. The slug check is what stops a key for one endpoint being used on another:
a key carries no audience of its own.

Every way of failing (no header, a malformed one, an unknown key, a revoked key, a revoked
endpoint, a key for another endpoint) raises the same ``BearerRejected``, so a response never
tells a prober which of them it hit. Each surface renders the rejection in its own body format
but sends the same status and ``WWW-Authenticate`` challenge (RFC 6750 §3). The one difference
is the caller's own doing: a request that presented no bearer token at all (no header, another
scheme, a header that holds no single token) gets the challenge without an error code (§3.1:
the client may not know it needs one), and every presented token that is refused gets
``error="invalid_token"``, alike.

The async form, ``aresolve_endpoint_bearer``, keeps what it resolved for ``KEY_CACHE_SECONDS``
(0.9 s, under the promised second) in the process, keyed by the key's SHA-256: a busy agent's
requests then cost no query and no thread hop for their authentication, and a revocation (of
the key or of its endpoint), or a change of the endpoint's verbs, reaches every process within
that time, measured from the start of the lookup that filled the entry. Only successes are
kept, so a key minted a moment ago works at once. The sync form always asks the database
(docs/decisions/0014-bearer-cache.md).

OAuth access tokens resolve elsewhere (``switchboard/oauth.py``): they are accepted only at
their own resource URLs (``/mcp/{slug}/oauth``, ``/a2a/{slug}``), never at the key URL, and are
not cached, so a revocation holds from the next request (docs/decisions/0038-oauth.md).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.utils import timezone

from switchboard.credentials import hash_key, key_for_plaintext, touch_key
from switchboard.lib import dbthread, frontdoor
from switchboard.models import Endpoint

REALM = "switchboard"
# A key's last_used_at is informational: writing it on every request would make the key row
# the hottest row in the database. touch_key guards in SQL too; checking the value just read
# here saves the round trip in the common case.
TOUCH_INTERVAL = dt.timedelta(minutes=1)
# Longer than any key (4 + 43 characters) or plausible OAuth token; anything longer is garbage
# and is refused before it is hashed.
MAX_AUTHORIZATION_BYTES = 4096
# How long aresolve_endpoint_bearer trusts a key it resolved without asking the database again:
# the longest a revocation can take to reach a request (docs/decisions/0014-bearer-cache.md).
# Under the promised second, so a request sent just after it is refused too.
KEY_CACHE_SECONDS = 0.9
# Entries kept at most; past it, expired entries go, and if none had, all of them.
KEY_CACHE_SIZE = 4096


class BearerRejected(Exception):
    """The caller did not present a live credential for this endpoint. Always 401, always alike
    for every presented token; ``presented`` is False when the request carried none, and its
    challenge then names no error (RFC 6750 §3.1)."""

    status = 401
    message = "missing or invalid bearer token for this endpoint"
    # A presented token refused, whichever way it failed.
    INVALID_TOKEN = (
        f'Bearer realm="{REALM}", error="invalid_token", '
        'error_description="The access token is missing, revoked, or not valid for this endpoint"'
    )
    # No bearer token at all.
    NO_TOKEN = f'Bearer realm="{REALM}"'

    def __init__(self, presented: bool = True) -> None:
        super().__init__(self.message)
        self.presented = presented

    @property
    def www_authenticate(self) -> str:
        return self.INVALID_TOKEN if self.presented else self.NO_TOKEN

    @property
    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": self.www_authenticate}

    def refusal(self) -> frontdoor.Refused:
        """This rejection as the front door's 401 (``switchboard.lib.frontdoor``), with the
        challenge; each surface encodes it in its own shape."""
        return frontdoor.Refused(
            self.status, frontdoor.UNAUTHORIZED, self.message, headers=self.headers
        )


def _header_from_scope(scope: Mapping[str, Any]) -> str | None:
    """The one Authorization header of an ASGI scope; None when absent, repeated or not text."""
    values = [
        value
        for name, value in _scope_headers(scope)
        if name.lower() == b"authorization"  # ASGI lowercases names; be lenient anyway
    ]
    # Two Authorization headers are ambiguous; refuse rather than pick one.
    if len(values) != 1 or len(values[0]) > MAX_AUTHORIZATION_BYTES:
        return None
    try:
        return values[0].decode("ascii")
    except UnicodeDecodeError:
        return None


def _scope_headers(scope: Mapping[str, Any]) -> Iterable[tuple[bytes, bytes]]:
    headers = scope.get("headers") or ()
    return [(bytes(name), bytes(value)) for name, value in headers]


def _header_from_request(request: HttpRequest) -> str | None:
    value = request.META.get("HTTP_AUTHORIZATION")
    if not isinstance(value, str) or len(value) > MAX_AUTHORIZATION_BYTES:
        return None
    return value


def bearer_token(request_or_scope: HttpRequest | Mapping[str, Any]) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None when there is none.

    The scheme is case-insensitive (RFC 7235 §2.1); the token is everything after it, which must
    be a single word: a key never holds whitespace, so a header that does is malformed.
    """
    if isinstance(request_or_scope, HttpRequest):
        header = _header_from_request(request_or_scope)
    else:
        header = _header_from_scope(request_or_scope)
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    # split() cuts at exactly the characters isspace() names, without a Python loop over them.
    if scheme.lower() != "bearer" or not token or len(token.split()) != 1:
        return None
    return token


def resolve_endpoint_bearer(
    request_or_scope: HttpRequest | Mapping[str, Any], slug: str
) -> Endpoint:
    """Return the live endpoint named ``slug`` whose key the request presents.

    ``request_or_scope`` is a Django ``HttpRequest`` or an ASGI HTTP scope (its ``headers`` list of
    byte pairs). Raises ``BearerRejected`` for every failure. Records the key's use at most once
    a minute. Runs queries: call it from sync code, or through ``aresolve_endpoint_bearer``.
    """
    token = bearer_token(request_or_scope)
    if token is None:
        raise BearerRejected(presented=False)
    key = key_for_plaintext(token)
    # key_for_plaintext already refuses revoked keys and revoked endpoints; the slug check is
    # the audience check. A foreign endpoint's key is indistinguishable from an unknown one.
    if key is None or key.endpoint.slug != slug:
        raise BearerRejected
    if key.last_used_at is None or key.last_used_at < timezone.now() - TOUCH_INTERVAL:
        touch_key(key)
    return key.endpoint


@dataclass(frozen=True, slots=True)
class _Resolved:
    endpoint: Endpoint
    expires: float  # time.monotonic()


# SHA-256 of the key → the live endpoint it resolved to. Read and written on the event loop
# only (aresolve_endpoint_bearer), so it needs no lock. The cached ``Endpoint`` is shared by the
# requests that hit it: callers read it, never change it.
_resolved: dict[bytes, _Resolved] = {}
# The cache's clock (tests move it).
_clock = time.monotonic


def forget_keys() -> None:
    """Drop every cached key resolution (tests; the next request of each key asks again)."""
    _resolved.clear()


def _remember(digest: bytes, endpoint: Endpoint, expires: float) -> None:
    if len(_resolved) >= KEY_CACHE_SIZE:
        now = _clock()
        for stale in [d for d, entry in _resolved.items() if entry.expires <= now]:
            del _resolved[stale]
        if len(_resolved) >= KEY_CACHE_SIZE:
            _resolved.clear()
    _resolved[digest] = _Resolved(endpoint, expires)


async def aresolve_endpoint_bearer(scope: Mapping[str, Any], slug: str) -> Endpoint:
    """``resolve_endpoint_bearer`` for an ASGI scope, through the per-process key cache.

    A key resolved less than ``KEY_CACHE_SECONDS`` ago answers from memory: no query, no
    thread. Otherwise the lookup runs in a worker thread and a success is kept. A revocation
    therefore takes effect within ``KEY_CACHE_SECONDS`` of its commit, in every process.
    """
    token = bearer_token(scope)
    if token is None:
        raise BearerRejected(presented=False)
    digest = hash_key(token)
    now = _clock()
    entry = _resolved.get(digest)
    if entry is not None and entry.expires > now:
        if entry.endpoint.slug != slug:
            raise BearerRejected
        return entry.endpoint
    # The lookup runs in a worker thread (the ORM is sync-only) inside a request boundary, as
    # Django's request cycle would (switchboard.lib.dbthread). The clock started before the
    # query: its snapshot is no older than that.
    endpoint = await dbthread.run(resolve_endpoint_bearer, scope, slug)
    _remember(digest, endpoint, now + KEY_CACHE_SECONDS)
    return endpoint
