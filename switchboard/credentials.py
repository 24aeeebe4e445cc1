"""Endpoints and their keys: the only module that writes them (as Django's ``create_user``).

The Board, the admin, the ``create_endpoint`` command and the demo all call these functions, so
creating an endpoint, minting or revoking a key means the same thing on every screen. The one
exception is revoking an endpoint itself: that is a lifecycle transition (its unfinished todos
are dead-lettered in the same statement), ``todos.lifecycle.revoke_endpoint``.

A key's plaintext exists only in what minting returns; only its SHA-256 is stored.

An endpoint with a push URL also has a push secret, which signs its push rings
(``todos/push.py``). The server must sign with it, so it is stored as sources store their
webhook secrets (plain, ``editable=False``, never rendered after the page that mints it): minted
when the endpoint first gets a push URL (``endpoint.push_secret`` on the returned endpoint is
then the one moment to show it) and by ``rotate_push_secret``.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import uuid
from collections.abc import Iterable
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import QuerySet
from django.db.models.functions import Now

from switchboard.lib import rotation, webhook_out
from switchboard.models import Endpoint, EndpointKey, Human, Team, Verb
from switchboard.teams import check_move

KEY_PREFIX = "sbk_"
PUSH_SECRET_PREFIX = "sbp_"  # noqa: S105 (a prefix, not a secret)
# "sbk_" and the first 8 characters of the random part: enough to tell keys apart in a list,
# far too little to guess the rest (24 bytes of entropy remain unshown).
DISPLAY_PREFIX_CHARS = len(KEY_PREFIX) + 8
# Every fixed word of the Board's paths under /endpoints/ and /sources/ (switchboard/urls.py):
# /endpoints/new is the vend wizard, so an endpoint called "new" could never be opened there, and
# a slug equal to any other path word would make its URLs read ambiguously. One list for both
# writers (todos/intake/sources.py uses it too); tests/switchboard/test_reserved_slugs.py checks
# it against the URLconf, so a new path word cannot be forgotten here.
RESERVED_SLUGS = frozenset(
    {
        "new",
        "key",
        "keys",
        "revoke",
        "secret",
        "rotate",
        "verify",
        "test",
        "events",
        "rules",
        "edit",
        "delete",
        "enable",
        "disable",
        "push-test",
        "push-secret",
        "push-url",
        "move",
        "connections",
    }
)


class EndpointRevoked(Exception):
    """The endpoint is revoked: a key for it would never be accepted, so none is minted."""

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__(f"{endpoint.slug} is revoked; a key for it would never work.")
        self.endpoint = endpoint


def normalize_verbs(verbs: Iterable[str]) -> list[str]:
    """Return ``verbs`` as an endpoint stores them; raise ``ValidationError`` on unknown verbs.

    The rule: each verb once, in the order ``Verb`` declares them, whatever order or repetition
    they came in. Equal scopes are then equal arrays, on every screen and in the database.
    """
    given = set(verbs)
    unknown = given - set(Verb.values)
    if unknown:
        raise ValidationError(
            f"unknown verbs: {', '.join(sorted(unknown))}; known: {', '.join(Verb.values)}",
            code="unknown_verb",
        )
    return [verb for verb in Verb.values if verb in given]


def validate_slug(slug: str) -> None:
    """Refuse a slug the Board's URLs reserve; forms call it too, to show the error in place."""
    if slug in RESERVED_SLUGS:
        raise ValidationError(
            f"“{slug}” is reserved on the Board; choose another slug.", code="reserved"
        )


def hash_key(plaintext: str) -> bytes:
    return hashlib.sha256(plaintext.encode()).digest()


def create_endpoint(
    owner: Human | None,
    *,
    team: Team | None = None,
    name: str,
    slug: str,
    verbs: Iterable[str],
    push_url: str | None = None,
    daily_budget_usd: Decimal | None = None,
) -> tuple[Endpoint, EndpointKey, str]:
    """Create an endpoint with its first key; return both and the key's plaintext (show once).

    It is owned by ``owner`` or, with ``owner`` None, by ``team`` (exactly one), with the daily
    budget ``daily_budget_usd`` (USD a UTC day, None for none).

    Both rows are written in one transaction: an endpoint never exists without a key. Raise
    ``ValidationError`` (by field) for a bad, reserved or taken slug, a blank name, an unknown
    verb, a bad push URL or a negative budget; nothing is written then.
    """
    try:
        validate_slug(slug)
    except ValidationError as exc:
        raise ValidationError({"slug": exc}) from None
    try:
        normalized = normalize_verbs(verbs)
    except ValidationError as exc:
        raise ValidationError({"verbs": exc}) from None
    if (owner is None) == (team is None):
        raise ValueError("an endpoint is owned by a human or by a team, exactly one")
    endpoint = Endpoint(
        owner=owner,
        team=team,
        name=name,
        slug=slug,
        verbs=normalized,
        push_url=push_url or None,
        push_secret=new_push_secret() if push_url else "",
        daily_budget_usd=_checked_budget(daily_budget_usd),
    )
    endpoint.full_clean()
    try:
        with transaction.atomic():
            endpoint.save()
            key, plaintext = _mint(endpoint)
    except IntegrityError:
        if not Endpoint.objects.filter(slug=slug).exists():
            raise
        # The slug was taken between full_clean's check and this insert.
        raise ValidationError({"slug": f"an endpoint named {slug!r} exists"}) from None
    return endpoint, key, plaintext


def check_push_url(url: str | None) -> None:
    """Check a push URL with the sender's own guard (``webhook_out.check``, under
    ``SWITCHBOARD_PUSH_ALLOW_PRIVATE`` as the sender reads it) before a form or a command stores
    it: raise ``ValidationError`` on ``push_url`` for a URL every ring to it would be refused,
    an inside address naming the setting that allows it. None and "" (no push) pass.

    Every form and command that takes a push URL calls it (the vend wizard, the endpoint page,
    the admin's endpoint form, ``create_endpoint --push-url``); ``create_endpoint`` and
    ``update_endpoint`` do not, so a test can store a URL no ring may reach, and the sender
    refuses it again on every try."""
    if not url:
        return
    try:
        webhook_out.check(url, allow_private=settings.SWITCHBOARD_PUSH_ALLOW_PRIVATE)
    except webhook_out.TargetRefused as exc:
        raise ValidationError({"push_url": str(exc)}) from None


def update_endpoint(
    endpoint: Endpoint,
    *,
    name: str,
    verbs: Iterable[str],
    push_url: str | None,
    daily_budget_usd: Decimal | object | None = ...,
) -> Endpoint:
    """Change what may change about ``endpoint``: its name, verbs, push URL and daily budget
    (USD a UTC day, None for none; left as it is when not given).

    An endpoint given its first push URL gets a push secret (read it from the returned endpoint
    to show it once); changing or removing the URL keeps the secret.

    The slug (in every URL its agents were configured with) is fixed at creation; the owner
    (whose sources' rules route to it, and who sees its todos) changes only by
    ``move_endpoint``. Raise ``ValidationError`` as
    ``create_endpoint`` does; the row is unchanged then.
    """
    try:
        normalized = normalize_verbs(verbs)
    except ValidationError as exc:
        raise ValidationError({"verbs": exc}) from None
    endpoint.name, endpoint.verbs, endpoint.push_url = name, normalized, push_url or None
    if daily_budget_usd is not ...:
        endpoint.daily_budget_usd = _checked_budget(daily_budget_usd)
    if endpoint.push_url and not endpoint.push_secret:
        endpoint.push_secret = new_push_secret()
    endpoint.full_clean()
    endpoint.save(update_fields=["name", "verbs", "push_url", "push_secret", "daily_budget_usd"])
    return endpoint


def _checked_budget(amount: object) -> Decimal | None:
    if amount is not None and (not isinstance(amount, Decimal) or amount < 0):
        raise ValidationError({"daily_budget_usd": "a non-negative amount of US dollars"})
    return amount


def move_endpoint(endpoint: Endpoint, team: Team, *, by: Human | None) -> Endpoint:
    """Give ``endpoint`` to ``team``: its todos, schedules and keys go with it, and the
    team's members see them from their next read (``switchboard/scope.py``).

    Refused (``switchboard.teams.TeamRefused``, nothing changed) unless ``by`` administers
    ``team`` and manages the endpoint (``switchboard.teams.check_move``); ``by`` None is the
    system (a command without ``--as``).
    """
    with transaction.atomic():
        row = Endpoint.objects.select_for_update().get(pk=endpoint.pk)
        check_move(row, team, by=by)
        row.owner, row.team = None, team
        row.save(update_fields=["owner", "team"])
    endpoint.owner, endpoint.team = None, team
    return endpoint


def new_push_secret() -> str:
    return PUSH_SECRET_PREFIX + secrets.token_urlsafe(32)


def rotate_push_secret(endpoint: Endpoint) -> str:
    """Give ``endpoint`` a new push secret and return it, to be shown once.

    Pushes sent from then on are signed with the new secret; the old one stops at once.
    """
    endpoint.push_secret = new_push_secret()
    endpoint.save(update_fields=["push_secret"])
    return endpoint.push_secret


_PUSH_ROTATION_PURPOSE = "switchboard.endpoints.push_secret"


def push_secret_fingerprint(secret: str) -> str:
    """The fingerprint a push secret's rotation question carries (switchboard/lib/rotation.py)."""
    return rotation.fingerprint(secret, _PUSH_ROTATION_PURPOSE)


def rotate_push_secret_if_current(endpoint_id: uuid.UUID, fingerprint: str) -> str | None:
    """Rotate the push secret only if it is still the one ``fingerprint`` names and the endpoint
    still pushes; return the new secret, or ``None`` (rotated meanwhile by a reloaded or
    concurrent POST, revoked, or no push URL)."""
    with transaction.atomic():
        endpoint = Endpoint.objects.select_for_update().get(pk=endpoint_id)
        if not endpoint.push_url or endpoint.is_revoked:
            return None
        if not rotation.still_current(endpoint.push_secret, _PUSH_ROTATION_PURPOSE, fingerprint):
            return None
        return rotate_push_secret(endpoint)


def mint_key(endpoint: Endpoint) -> tuple[EndpointKey, str]:
    """Create a key for ``endpoint``; return the row and the plaintext, which is never stored.

    Raise ``EndpointRevoked`` if the endpoint is revoked (as the database has it, not as the
    caller's copy does). A revocation racing this call may still leave a key behind; it is
    harmless, because ``key_for_plaintext`` refuses every key of a revoked endpoint.
    """
    if Endpoint.objects.filter(pk=endpoint.pk, revoked_at__isnull=False).exists():
        raise EndpointRevoked(endpoint)
    return _mint(endpoint)


def _mint(endpoint: Endpoint) -> tuple[EndpointKey, str]:
    plaintext = KEY_PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    key = EndpointKey.objects.create(
        endpoint=endpoint,
        prefix=plaintext[:DISPLAY_PREFIX_CHARS],
        key_hash=hash_key(plaintext),
    )
    return key, plaintext


def revoke_keys(keys: QuerySet[EndpointKey]) -> int:
    """Revoke the live keys among ``keys``; return how many were live.

    Agents using them get 401 from their next request. A key is not lifecycle state: this is a
    plain column update, in the database's clock like every other timestamp. Revoked keys stay,
    so "which key was used when" remains answerable.
    """
    return keys.filter(revoked_at__isnull=True).update(revoked_at=Now())


def revoke_key(key: EndpointKey) -> bool:
    """Revoke ``key``; return False if it was revoked already."""
    return bool(revoke_keys(EndpointKey.objects.filter(pk=key.pk)))


def key_for_plaintext(plaintext: str) -> EndpointKey | None:
    """Return the live key (and its live endpoint) for ``plaintext``, or None.

    Unknown keys, revoked keys and keys of revoked endpoints all give None: callers answer all
    three the same way, so a response never tells which.
    """
    if not plaintext.startswith(KEY_PREFIX) or len(plaintext) > 128:
        return None
    return (
        EndpointKey.objects.select_related("endpoint", "endpoint__owner")
        .filter(
            key_hash=hash_key(plaintext),
            revoked_at__isnull=True,
            endpoint__revoked_at__isnull=True,
        )
        .first()
    )


def touch_key(key: EndpointKey) -> None:
    """Record a use of ``key``, writing at most once a minute per key (the row is hot otherwise)."""
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE endpoint_keys SET last_used_at = now() WHERE id = %s"
            " AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')",
            [key.pk],
        )
