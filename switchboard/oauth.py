"""OAuth 2.1 for agents: the resource URLs, the token → endpoint resolver, the connections an
endpoint's page lists and revokes, and the client metadata documents' fetch.

django-oauth-toolkit is the authorization server (its models, the authorization code with PKCE
S256, the token, revocation and registration views, settings ``OAUTH2_PROVIDER``); the pages in
front of it are ``switchboard/oauth_views.py``. This module is what the agents' surfaces ask:

- **The resources.** Each endpoint has two OAuth resources, each an absolute URL on this origin:
  ``{origin}/mcp/{slug}/oauth`` (MCP) and ``{origin}/a2a/{slug}`` (A2A). A token is issued for
  exactly one of them (RFC 8707; the consent page sets it, ``oauth_views``) and is accepted only
  there: a token issued without a resource, or for another endpoint or surface, is refused
  (django-oauth-toolkit's own check lets a resource-less token through: this one does not).
  The key URL ``/mcp/{slug}`` takes no tokens and advertises no OAuth.
- **The resolver** (``resolve_token``): the presented token's SHA-256 (tokens are stored only as
  checksums, ``COMPLIANT_BCP_RFC9700_TOKEN_STORAGE``) → a live access token for exactly this
  resource → the live endpoint of that slug if its human still manages it (owns it, or is an
  admin of its team: ``switchboard.scope.managed_by``, the rule consent offers endpoints by)
  → that endpoint with its verbs cut to the token's scopes (``switchboard.lib.oauth_scopes``),
  so every check downstream (tools/list, ``allows``, the MCP fast path) sees only what the
  token may do. Tokens are not kept in the keys' one-second cache
  (docs/decisions/0014-bearer-cache.md): a revocation on the Board refuses the very next
  request, at one indexed lookup per request (docs/decisions/0038-oauth.md).
- **Connections**: an endpoint's live grants, one per client, granter and surface, for the
  endpoint's page and ``manage.py oauth``, found by their tokens' resource (whoever granted
  them: the owner, or an admin of the owning team); revoking one revokes its refresh tokens
  and deletes its access tokens.
- **A code is exchanged once** (``Validator``, the toolkit's ``OAUTH2_VALIDATOR_CLASS``): the
  toolkit deletes a code's grant when it is exchanged, so each exchange also writes the code's
  SHA-256 (never the code) with what it issued (``SpentCode``: the access token and the refresh
  token's family), in the same transaction; a second exchange of it is refused
  ``invalid_grant`` as before and revokes all of that (RFC 6749 §4.1.2), the tokens rotated from
  it since included. The sweeper's retention drops a row once nothing it names is live.
- **Client metadata documents** (``GuardedMetadataFetcher``, the ``CIMD_METADATA_FETCHER``):
  fetched through the push rings' SSRF guard (``switchboard/lib/webhook_out.py``), https only,
  at most ``CIMD_MAX_DOCUMENT_SIZE`` bytes, JSON only, kept as long as their ``Cache-Control``
  says within django-oauth-toolkit's bounds.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import ipaddress
import json
import logging
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import BooleanField, Count, Exists, F, Func, Max, Model, OuterRef, Value
from django.utils import timezone
from oauth2_provider.cimd import CIMDError
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken, clear_expired
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings
from oauthlib.oauth2.rfc6749 import errors as oauth_errors

from switchboard.auth import bearer_token
from switchboard.lib import asgi, dbthread, oauth_scopes, webhook_out
from switchboard.models import SLUG_PATTERN, Endpoint, Human, SpentCode
from switchboard.scope import managed_by

logger = logging.getLogger(__name__)

MCP = "mcp"
A2A = "a2a"
# An endpoint's slug as the resource paths spell it: the models' rule (without anchors), to be
# matched whole or set inside the resource paths' pattern. It has no character a regular
# expression or a SQL/JSON path string reads as anything but itself: ``_for_endpoint`` relies
# on it.
_SLUG = re.compile(SLUG_PATTERN)
# The path of each surface's OAuth resource, and the well-known prefix its metadata sits under
# (RFC 9728 §3.1: inserted before the resource's path).
_RESOURCE_PATH = re.compile(
    rf"^/(?:(?P<mcp>mcp)/(?P<mslug>{_SLUG.pattern})/oauth|a2a/(?P<aslug>{_SLUG.pattern}))$"
)
PRM_PREFIX = "/.well-known/oauth-protected-resource"
# A token's last use is written at most this often (as a key's is: switchboard/auth.py).
TOUCH_INTERVAL = dt.timedelta(minutes=1)


def resource_path(kind: str, slug: str) -> str:
    return f"/mcp/{slug}/oauth" if kind == MCP else f"/a2a/{slug}"


def resource_url(origin: str, kind: str, slug: str) -> str:
    """The RFC 8707 resource of ``slug``'s ``kind`` surface on ``origin`` (scheme://host)."""
    return origin + resource_path(kind, slug)


def metadata_url(origin: str, kind: str, slug: str) -> str:
    """Where that resource's protected-resource metadata is (RFC 9728, path-inserted)."""
    return origin + PRM_PREFIX + resource_path(kind, slug)


def parse_resource(url: str) -> tuple[str, str, str] | None:
    """(origin, kind, slug) of one of this server's resource URLs, or None for anything else
    (a query, a fragment, userinfo or a path that names no resource)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        return None
    if "@" in parts.netloc:
        return None
    match = _RESOURCE_PATH.match(parts.path)
    if match is None:
        return None
    kind = MCP if match.group("mcp") else A2A
    slug = match.group("mslug") or match.group("aslug")
    return f"{parts.scheme}://{parts.netloc}", kind, slug


def origin_of(scope: asgi.Scope) -> str:
    """scheme://host of an ASGI request (Host already checked against ALLOWED_HOSTS by the
    surface; the scheme is the trusted proxies' word, switchboard/lib/proxies.py)."""
    host = asgi.header(scope, b"host") or "localhost"
    return f"{scope.get('scheme', 'http')}://{host}"


def challenge(origin: str, kind: str, slug: str, scopes: tuple[str, ...], error: str | None) -> str:
    """The ``WWW-Authenticate`` value of a refusal at a resource (RFC 6750 §3, RFC 9728 §5.1):
    the absolute metadata URL, the scopes wanted, and the error when a token was presented."""
    parts = []
    if error is not None:
        parts.append(f'error="{error}"')
    parts.append(f'resource_metadata="{metadata_url(origin, kind, slug)}"')
    if scopes:
        parts.append(f'scope="{" ".join(scopes)}"')
    return "Bearer " + ", ".join(parts)


# --- the resolver --------------------------------------------------------------------------------


class TokenRejected(Exception):
    """No live token for this resource: always 401, always alike (as ``BearerRejected``)."""

    def __init__(self, presented: bool) -> None:
        super().__init__("missing or invalid access token for this resource")
        self.presented = presented


@dataclass(frozen=True, slots=True)
class TokenGrant:
    """What a token may do: ``endpoint`` with its verbs cut to the token's scopes, the verbs the
    endpoint itself has (``full_verbs``), and the scopes."""

    endpoint: Endpoint
    full_verbs: frozenset[str]
    scopes: tuple[str, ...]
    # Who holds the grant, as MCP Tasks key a requester's submissions (mcp_tasks.key_digest):
    # the client, the human and the endpoint, the same across the access tokens refreshes hand
    # out every hour (``requester_digest``).
    requester: bytes

    def missing_scope(self, verb: str) -> str | None:
        """The scope to ask for when the endpoint has ``verb`` but the token does not: the
        step-up answer (403 ``insufficient_scope``). None when the token has it, or when the
        endpoint itself has it not (a token never exceeds its endpoint's verbs)."""
        full = Endpoint(verbs=list(self.full_verbs))
        if not full.allows(verb) or self.endpoint.allows(verb):
            return None
        return oauth_scopes.scope_of(verb)


def _used(token: AccessToken) -> bool:
    """Whether the token was ever presented: ``updated`` is its last use (``resolve_token``
    moves it), equal to its creation until then."""
    return token.updated - token.created > _NEVER_USED_SLACK


_NEVER_USED_SLACK = dt.timedelta(seconds=1)


def _checksum(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def resolve_token(token: str, resource: str) -> TokenGrant:
    """The grant of ``token`` at ``resource`` (one of ``resource_url``'s), or ``TokenRejected``.

    Sync (queries): the surfaces call ``aresolve_token``.
    """
    parsed = parse_resource(resource)
    if parsed is None:
        raise TokenRejected(True)
    _origin, _kind, slug = parsed
    row = (
        AccessToken.objects.filter(token_checksum=_checksum(token), expires__gt=timezone.now())
        .only("id", "user_id", "application_id", "scope", "resource", "created", "updated")
        .first()
    )
    # Exactly this resource: a token without one, or for any other, is refused here.
    if row is None or row.user_id is None or list(row.resource or []) != [resource]:
        raise TokenRejected(True)
    # The granter must still manage the endpoint: one who left its team, or is no longer one of
    # the team's admins, no longer connects anything to it.
    endpoint = Endpoint.objects.active().filter(managed_by(row.user_id), slug=slug).first()
    if endpoint is None:
        raise TokenRejected(True)
    now = timezone.now()
    if row.updated < now - TOUCH_INTERVAL or not _used(row):
        AccessToken.objects.filter(pk=row.pk, updated=row.updated).update(updated=now)
    scopes = oauth_scopes.parse(row.scope)
    allowed = oauth_scopes.verbs_of(scopes)
    clipped = copy.copy(endpoint)
    clipped.verbs = [verb for verb in endpoint.verbs if verb in allowed]
    requester = requester_digest(row, endpoint, token)
    return TokenGrant(clipped, frozenset(endpoint.verbs), scopes, requester)


def requester_digest(row: AccessToken, endpoint: Endpoint, token: str) -> bytes:
    """The stable SHA-256 naming the requester behind ``token`` (its row ``row``) at
    ``endpoint``: its client application and human, which a refresh keeps, so ``tasks/list``
    still lists what the client submitted an hour and a token ago. A token without an
    application (none is issued here) stands for itself."""
    if row.application_id is None:
        return hashlib.sha256(token.encode("utf-8")).digest()
    who = f"oauth-requester:{row.application_id}:{row.user_id}:{endpoint.id}"
    return hashlib.sha256(who.encode()).digest()


async def aresolve_token(scope: asgi.Scope, resource: str) -> TokenGrant:
    """``resolve_token`` for an ASGI request's bearer, in one worker-thread hop; no cache, so a
    revocation holds from the next request on."""
    token = bearer_token(scope)
    if token is None:
        raise TokenRejected(False)
    if token.startswith("sbk_"):  # a key is for the key URL, never an OAuth resource
        raise TokenRejected(True)
    return await dbthread.run(resolve_token, token, resource)


# --- a code is exchanged once -------------------------------------------------------------------


class _SpentMeanwhile(Exception):
    """Another exchange of the same code wrote its record first: two exchanges at once."""


def _code_digest(code: str) -> bytes:
    return hashlib.sha256(code.encode("utf-8")).digest()


def _record_spent(code: str, token: dict[str, Any]) -> None:
    """Write that ``code`` was exchanged for ``token`` (the toolkit's token response, just
    saved in this transaction): the code's digest, the access token's id and its refresh
    token's family. ``_SpentMeanwhile`` when a record of it is there already (the unique
    digest makes a concurrent exchange wait for the first to commit, then fail here)."""
    issued = (
        AccessToken.objects.filter(token_checksum=_checksum(token["access_token"]))
        .values_list("id", "refresh_token__token_family")
        .first()
    )
    access_id, family = issued if issued is not None else (None, None)
    try:
        with transaction.atomic():
            SpentCode.objects.create(
                digest=_code_digest(code), access_token_id=access_id, token_family=family
            )
    except IntegrityError:
        raise _SpentMeanwhile from None


def revoke_spent_code(code: str) -> bool:
    """Revoke what the exchange of ``code`` issued, when it was exchanged (RFC 6749 §4.1.2):
    every refresh token of its family (those rotated from it since included) with their access
    tokens, and the access token it issued. True when ``code`` had been exchanged; a second
    call revokes nothing more."""
    spent = SpentCode.objects.filter(digest=_code_digest(code)).first()
    if spent is None:
        return False
    with transaction.atomic():
        if spent.token_family is not None:
            RefreshToken.revoke_family(spent.token_family)
        if spent.access_token_id is not None:
            AccessToken.objects.filter(pk=spent.access_token_id).delete()
    return True


# The hook ``Validator`` records each exchange in: the toolkit's private save step, inside its
# token transaction (docs/decisions/0025-vendor-boundaries.md). Without it a reused code would
# be refused but revoke nothing, so a release without it stops the import: fail closed.
if not callable(getattr(OAuth2Validator, "_save_bearer_token", None)):
    raise ImportError(
        "django-oauth-toolkit's OAuth2Validator has no _save_bearer_token: this release is not"
        " the one switchboard/oauth.py's Validator was proven on (pyproject.toml pins 3.4)"
    )


class Validator(OAuth2Validator):
    """django-oauth-toolkit's validator (``OAUTH2_VALIDATOR_CLASS``) remembering each code's
    exchange, so that a second one revokes what the first issued (module docstring)."""

    def validate_code(
        self, client_id: str, code: str, client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        if super().validate_code(client_id, code, client, request, *args, **kwargs):
            return True
        # Refused (invalid_grant); when because the code was exchanged already, its tokens go.
        if revoke_spent_code(code):
            logger.warning(
                "oauth: an authorization code was exchanged again (client %s): refused, and the"
                " tokens its first exchange issued revoked",
                client_id,
            )
        return False

    def save_bearer_token(self, token: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().save_bearer_token(token, request, *args, **kwargs)
        except _SpentMeanwhile:
            # Two exchanges of one code at once: this one's tokens went with its transaction;
            # the other's are revoked, as a later reuse would revoke them.
            revoke_spent_code(request.code)
            logger.warning(
                "oauth: an authorization code was exchanged twice at once (client %s): the"
                " second refused, the first's tokens revoked",
                request.client_id,
            )
            raise oauth_errors.InvalidGrantError(request=request) from None

    def _save_bearer_token(self, token: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        # Inside save_bearer_token's transaction: the record commits with the tokens or not at
        # all (a refusal while saving, invalid_target say, leaves the code usable, unrecorded).
        saved = super()._save_bearer_token(token, request, *args, **kwargs)
        if request.grant_type == "authorization_code":
            _record_spent(request.code, token)
        return saved


# --- connections -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Connection:
    """One human's live grant of one client at one of an endpoint's two resources (``kind``):
    the scopes that human's live sign-ins of that client allow together, the first one's time
    and the newest use. A client is one ``Application`` row however many humans sign in with
    it (a Client ID Metadata Document's ``client_id`` above all: the toolkit makes one row per
    document URL), so each granter's grant is a connection of its own, listed with its own
    scopes and revoked alone (``revoke_connection`` with ``user_id``)."""

    application_id: int
    user_id: int
    client: str
    redirect_host: str
    kind: str
    scopes: tuple[str, ...]
    granted_by: str
    granted_at: dt.datetime
    last_used: dt.datetime | None


@dataclass(frozen=True, slots=True)
class Revoked:
    """What a revocation ended: the grants (a client and the human who granted it) that had
    live tokens for the endpoint, and those tokens (refresh and access)."""

    grants: int
    tokens: int


def client_name(application: Application) -> str:
    return application.name or application.client_id


def redirect_host(application: Application) -> str:
    first = (application.redirect_uris or "").split()
    if not first:
        return ""
    try:
        return urlsplit(first[0]).netloc or first[0]
    except ValueError:
        return first[0]


class _PathExists(Func):
    """``jsonb_path_exists(json, path)``: whether a SQL/JSON path finds anything in ``json``."""

    function = "jsonb_path_exists"
    template = "%(function)s(%(expressions)s::jsonpath)"
    output_field = BooleanField()


def _for_endpoint(slug: str) -> _PathExists:
    """Whether a token's ``resource`` (RFC 8707 resources, a JSON array of URLs) names one of
    ``slug``'s OAuth resources, on any origin: the token is this endpoint's connection whoever
    granted it (its owner, or an admin of the owning team), so the endpoint's page and
    ``manage.py oauth`` find it by what it may reach, never by who the endpoint's owner is."""
    if not _SLUG.fullmatch(slug):
        raise ValueError(f"{slug!r} is not an endpoint slug")
    pattern = rf"^https?://[^/?#@]+/(mcp/{slug}/oauth|a2a/{slug})$"
    return _PathExists(F("resource"), Value(f"$[*] ? (@ like_regex {json.dumps(pattern)})"))


def _kind_for(resources: Any, slug: str) -> str | None:
    """The surface (``MCP`` or ``A2A``) of the first of ``resources`` that is ``slug``'s."""
    for resource in resources or []:
        parsed = parse_resource(str(resource))
        if parsed is not None and parsed[2] == slug:
            return parsed[1]
    return None


def _live_tokens(
    endpoint: Endpoint, application_id: int | None, user_id: int | None
) -> tuple[list[RefreshToken], list[AccessToken]]:
    """The live refresh and access tokens whose resource is one of this endpoint's (on any
    origin), of ``application_id`` and granted by ``user_id`` where they are given (None:
    every client, every granter). Two queries."""
    mine = _for_endpoint(endpoint.slug)
    which: dict[str, int] = {}
    if application_id is not None:
        which["application_id"] = application_id
    if user_id is not None:
        which["user_id"] = user_id
    refresh = RefreshToken.objects.filter(mine, revoked__isnull=True, **which).only(
        "id", "application_id", "user_id"
    )
    access = AccessToken.objects.filter(mine, expires__gt=timezone.now(), **which).only(
        "id", "application_id", "user_id"
    )
    return list(refresh.order_by("created")), list(access.order_by("created"))


def connections(endpoint: Endpoint) -> list[Connection]:
    """The endpoint's connections, one per client, granter and surface, oldest grant first: the
    live refresh tokens (every sign-in has one; its current access token carries the scopes and
    the last use) whose resource is one of the endpoint's, whoever granted them (its owner, or
    an admin of its team: those who manage it, ``switchboard.scope.managed_by``). One query,
    however many there are."""
    refresh = (
        RefreshToken.objects.filter(
            _for_endpoint(endpoint.slug), revoked__isnull=True, access_token__isnull=False
        )
        .select_related("application", "user", "access_token")
        .order_by("created")
    )
    found: dict[tuple[int, int, str], Connection] = {}
    for token in refresh:
        access: AccessToken = token.access_token
        kind = _kind_for(token.resource, endpoint.slug)
        if kind is None:
            continue
        last_used = access.updated if _used(access) else None
        scopes = oauth_scopes.parse(access.scope)
        key = (token.application_id, token.user_id, kind)
        previous = found.get(key)
        if previous is not None:
            # Another sign-in of the same client by the same human: one grant, its scopes
            # together, its newest use.
            newest = max(
                (t for t in (previous.last_used, last_used) if t is not None), default=None
            )
            found[key] = Connection(
                previous.application_id,
                previous.user_id,
                previous.client,
                previous.redirect_host,
                kind,
                oauth_scopes.parse(" ".join((*previous.scopes, *scopes))),
                previous.granted_by,
                previous.granted_at,
                newest,
            )
            continue
        user: Human = token.user
        found[key] = Connection(
            token.application_id,
            token.user_id,
            client_name(token.application),
            redirect_host(token.application),
            kind,
            scopes,
            user.username,
            token.created,
            last_used,
        )
    return list(found.values())


@dataclass(frozen=True, slots=True)
class Cleared:
    """What ``clear_expired_tokens`` deleted, per table of the toolkit's, and the records of
    exchanged codes (``SpentCode``) left with nothing live to revoke."""

    access_tokens: int
    refresh_tokens: int
    codes: int
    spent_codes: int = 0

    @property
    def total(self) -> int:
        return self.access_tokens + self.refresh_tokens + self.codes + self.spent_codes


_CLEARED_TABLES: tuple[type[Model], ...] = (AccessToken, RefreshToken, Grant)


def clear_expired_tokens() -> Cleared:
    """Delete the toolkit's spent rows: expired access tokens and codes, and refresh tokens
    revoked or unused for longer than ``SWITCHBOARD_OAUTH_REFRESH_TOKEN_SECONDS`` (a rotated
    token is kept that long so a replay of it still revokes its family). Every refresh leaves a
    revoked token behind; the sweeper's retention step calls this so the connections' scan
    stays the size of what is in use. Then the records of exchanged codes whose tokens are all
    gone (``clear_spent_codes``).

    The toolkit's ``clear_expired`` only logs what it deleted, so each table is counted around
    it: the rows there before, less those up to the then highest id left after, so a sign-in
    meanwhile does not hide a deletion. A figure for the sweeper's report, not an audit: a token
    a revocation deletes during the clear counts too. Two queries a table, over tables this
    clear keeps small."""
    before = [
        model._default_manager.aggregate(top=Max("pk"), rows=Count("pk"))
        for model in _CLEARED_TABLES
    ]
    clear_expired()
    # max: a row given an id below the top but committed after the first count is no deletion.
    gone = [
        max(0, counted["rows"] - model._default_manager.filter(pk__lte=counted["top"]).count())
        if counted["top"] is not None
        else 0
        for model, counted in zip(_CLEARED_TABLES, before, strict=True)
    ]
    access_tokens, refresh_tokens, codes = gone
    return Cleared(access_tokens, refresh_tokens, codes, clear_spent_codes())


def clear_spent_codes() -> int:
    """Delete the records of exchanged codes that name nothing live: no refresh token of their
    family unrevoked, no unexpired access token of theirs. A reuse of such a code would revoke
    nothing, and is refused anyway (its grant is gone). One statement, an anti-join over the
    records, each a probe of the toolkit's indexes (``token_family``, the primary key)."""
    now = timezone.now()
    live_family = RefreshToken.objects.filter(
        token_family=OuterRef("token_family"), revoked__isnull=True
    )
    live_access = AccessToken.objects.filter(pk=OuterRef("access_token_id"), expires__gt=now)
    # A record is written in its exchange's transaction, with the tokens it names: never seen
    # here without them.
    deleted, _per_model = SpentCode.objects.filter(
        ~Exists(live_family), ~Exists(live_access)
    ).delete()
    return deleted


def revoke_connection(
    endpoint: Endpoint, application_id: int, user_id: int | None = None
) -> Revoked:
    """Revoke ``application_id``'s live tokens for ``endpoint``: the grant of ``user_id`` when
    given (one row of ``connections``), else every human's grant of that client. Refresh tokens
    are revoked and access tokens deleted, so the next request with one is refused."""
    return _revoke(*_live_tokens(endpoint, application_id, user_id))


def revoke_all(endpoint: Endpoint) -> Revoked:
    """Revoke every connection of ``endpoint`` (``manage.py oauth revoke --all``)."""
    return _revoke(*_live_tokens(endpoint, None, None))


def _revoke(refresh: list[RefreshToken], access: list[AccessToken]) -> Revoked:
    """Revoke ``refresh`` and delete ``access`` in one transaction; say what that ended."""
    grants = {(t.application_id, t.user_id) for t in (*refresh, *access)}
    with transaction.atomic():
        for token in refresh:  # the toolkit's order: the refresh token, then its access token
            token.revoke()
        AccessToken.objects.filter(pk__in=[token.pk for token in access]).delete()
    return Revoked(len(grants), len(refresh) + len(access))


def endpoints_for_consent(human_id: int) -> list[Endpoint]:
    """The live endpoints a human may grant a client: those they manage (their own, and their
    teams' where they are an admin). A connection is a credential, and a team's members who
    are not its admins vend none (docs/decisions/0034-teams.md)."""
    return list(Endpoint.objects.active().filter(managed_by(human_id)))


# --- registration: redirect URIs -----------------------------------------------------------------


def redirect_uri_problem(uri: str) -> str | None:
    """Why a registered redirect URI is refused, or None: it must be absolute without a
    fragment; http only on loopback (native clients, RFC 8252 §7.3); never a private,
    link-local or otherwise non-global address, nor a single-label intranet name."""
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError:
        return f"{uri!r} is not a URL"
    if parts.fragment:
        return f"{uri!r} has a fragment"
    if parts.scheme not in oauth2_settings.ALLOWED_REDIRECT_URI_SCHEMES:
        return f"{uri!r}: the scheme {parts.scheme!r} is not allowed"
    if parts.scheme not in ("http", "https"):
        return None  # a native app's private-use scheme: handed to the app by the OS
    if not host:
        return f"{uri!r} has no host"
    loopback = host == "localhost"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if ip is not None:
        if ip.is_loopback:
            loopback = True
        elif not ip.is_global or ip.is_multicast:
            return f"{uri!r} names a private, link-local or reserved address"
    elif not loopback and ("." not in host or host.endswith((".local", ".internal", ".localhost"))):
        return f"{uri!r} names an intranet host"
    if parts.scheme == "http" and not loopback:
        return f"{uri!r}: http is for loopback redirect URIs only; use https"
    return None


# --- client metadata documents ------------------------------------------------------------------

_MAX_AGE = re.compile(r"max-age\s*=\s*([0-9]{1,18})", re.IGNORECASE)
# Named when the guard refuses a document's private address: the switch for this fetch, not the
# push rings' (docs/configuration.md).
CIMD_PRIVATE_SETTING = "SWITCHBOARD_OAUTH_CIMD_ALLOW_PRIVATE"


def _check_client_id_url(client_id: str) -> None:
    """The draft's rules for a client_id URL: https, a host, a path, no userinfo, fragment or
    dot segments."""
    parts = urlsplit(client_id)
    if parts.scheme != "https" or not parts.hostname:
        raise CIMDError("the client_id URL must be https:// with a host")
    if parts.username or parts.password or parts.fragment:
        raise CIMDError("the client_id URL must have no userinfo or fragment")
    if not parts.path or parts.path == "/":
        raise CIMDError("the client_id URL must have a path")
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        raise CIMDError("the client_id URL must have no dot segments")


def _max_age(cache_control: str | None) -> int:
    floor = int(oauth2_settings.CIMD_METADATA_MIN_AGE_SECONDS)
    ceiling = int(oauth2_settings.CIMD_METADATA_MAX_AGE_SECONDS)
    age = ceiling
    if cache_control:
        lowered = cache_control.lower()
        if "no-store" in lowered or "no-cache" in lowered:
            age = floor
        elif (match := _MAX_AGE.search(cache_control)) is not None:
            age = int(match.group(1))
    return max(floor, min(age, ceiling))


class GuardedMetadataFetcher:
    """django-oauth-toolkit's ``CIMD_METADATA_FETCHER``: a client's metadata document through
    the push rings' SSRF guard (``webhook_out.get``: resolved once, every address global unless
    ``SWITCHBOARD_OAUTH_CIMD_ALLOW_PRIVATE``, connected to the address checked, no redirects),
    https only, JSON only, at most ``CIMD_MAX_DOCUMENT_SIZE`` bytes. The toolkit then checks
    that the document's ``client_id`` is its URL and keeps it for the returned seconds."""

    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        _check_client_id_url(client_id)
        try:
            answer = webhook_out.get(
                client_id,
                {"Accept": "application/json"},
                timeout=float(oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS),
                allow_private=bool(settings.SWITCHBOARD_OAUTH_CIMD_ALLOW_PRIVATE),
                max_bytes=int(oauth2_settings.CIMD_MAX_DOCUMENT_SIZE),
                https_only=True,
                private_setting=CIMD_PRIVATE_SETTING,
            )
        except (webhook_out.TargetRefused, webhook_out.TooLarge) as exc:
            raise CIMDError(str(exc)) from None
        except (OSError, ValueError) as exc:
            raise CIMDError(f"could not fetch the document: {exc}") from None
        except Exception as exc:  # http.client's protocol errors
            raise CIMDError(f"could not fetch the document: {exc}") from None
        if answer.status != 200:
            raise CIMDError(f"the document answered HTTP {answer.status}")
        media = answer.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json" and not (
            media.startswith("application/") and media.endswith("+json")
        ):
            raise CIMDError(f"the document is not JSON (Content-Type {media!r})")
        try:
            document = json.loads(answer.body)
        except ValueError:
            raise CIMDError("the document is not valid JSON") from None
        if not isinstance(document, dict):
            raise CIMDError("the document is not a JSON object")
        if document.get("client_id") != client_id:
            raise CIMDError("the document's client_id is not its URL")
        for uri in document.get("redirect_uris") or []:
            if isinstance(uri, str) and (problem := redirect_uri_problem(uri)) is not None:
                raise CIMDError(problem)
        return document, _max_age(answer.headers.get("cache-control"))
