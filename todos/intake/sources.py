"""Webhook sources and their rules: the only module that writes them.

Sources and rules are configuration, not lifecycle state, so the ORM writes them, here and
nowhere else: the admin, the Board, the ``create_source``/``create_rule`` commands and the demo
call these functions (the shared ``todos.intake.forms.RuleForm`` saves through them), so the same
button means the same thing on every screen and the same checks hold everywhere.

What a source's secret means, everywhere:

- A source gets a secret when it verifies signatures: created with ``verify``, or when
  verification is turned on and it has none. A source created without verification has no
  secret to keep safe, and its secret is shown at the moment the sender needs it.
- Turning verification off keeps the secret, so turning it back on needs no new one.
- Rotating a secret turns verification on. Whoever rotates is handed a secret to sign with;
  leaving the source unverified would let that person believe deliveries are now checked while
  unsigned ones are still accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max, QuerySet

from switchboard import credentials
from switchboard.lib import rotation
from switchboard.models import Endpoint, Human, Team
from switchboard.teams import check_move
from todos.intake import routing
from todos.intake.deliveries import new_secret
from todos.models import Rule, SignatureScheme, Source

# A rule appended without a position goes this far after the last one, leaving room between.
POSITION_STEP = 10


def validate_slug(slug: str) -> None:
    """Refuse a slug the Board's URLs reserve; forms call it too, to show the error in place."""
    # The same path words as endpoints': /sources/new is the Board's form, and so on.
    credentials.validate_slug(slug)


# --- sources ---------------------------------------------------------------------------------


def create_source(
    owner: Human | None,
    slug: str,
    *,
    team: Team | None = None,
    name: str = "",
    verify: bool = True,
    scheme: str = SignatureScheme.GITHUB,
) -> tuple[Source, str | None]:
    """Create a source; return it and its secret (to be shown once), ``None`` if unverified.

    It is owned by ``owner`` or, with ``owner`` None, by ``team`` (exactly one). Raise
    ``ValidationError`` (by field) for a bad, reserved or taken slug.
    """
    if (owner is None) == (team is None):
        raise ValueError("a source is owned by a human or by a team, exactly one")
    try:
        validate_slug(slug)
    except ValidationError as exc:
        raise ValidationError({"slug": exc}) from None
    secret = new_secret(scheme) if verify else ""
    source = Source(
        owner=owner,
        team=team,
        slug=slug,
        name=name or slug,
        verify=verify,
        secret=secret,
        scheme=scheme,
    )
    source.full_clean()
    try:
        with transaction.atomic():
            source.save()
    except IntegrityError:
        if not Source.objects.filter(slug=slug).exists():
            raise
        # The slug was taken between full_clean's check and this insert.
        raise ValidationError({"slug": f"a source named {slug!r} exists"}) from None
    return source, (secret or None)


def update_source(source: Source, *, name: str) -> Source:
    """Rename ``source`` (its slug as the name when ``name`` is blank).

    The slug (in the URL its sender posts to) and the owner (whose endpoints its rules route to)
    are fixed at creation; verification changes through ``set_verify`` and ``rotate_secret``.
    """
    source.name = name or source.slug
    source.full_clean()
    source.save(update_fields=["name"])
    return source


def move_source(source: Source, team: Team, *, by: Human | None) -> Source:
    """Give ``source`` to ``team``, as ``credentials.move_endpoint`` gives an endpoint: refused
    (``switchboard.teams.TeamRefused``, nothing changed) unless ``by`` administers ``team`` and
    manages the source. Its rules then route to the team's endpoints only."""
    with transaction.atomic():
        row = Source.objects.select_for_update().get(pk=source.pk)
        check_move(row, team, by=by)
        row.owner, row.team = None, team
        row.save(update_fields=["owner", "team"])
    source.owner, source.team = None, team
    return source


def set_verify(source: Source, verify: bool) -> str | None:
    """Turn verification on (minting a secret when there is none) or off; a new secret or None."""
    minted = None
    if verify and not source.secret:
        minted = source.secret = new_secret(source.scheme)
    source.verify = verify
    source.save(update_fields=["secret", "verify"])
    return minted


def rotate_secret(source: Source) -> str:
    """Give ``source`` a new secret and turn verification on; return it, to be shown once.

    The old secret stops working at once.
    """
    source.secret = new_secret(source.scheme)
    source.verify = True
    source.save(update_fields=["secret", "verify"])
    return source.secret


_ROTATION_PURPOSE = "switchboard.sources.secret"


def secret_fingerprint(secret: str) -> str:
    """The fingerprint a source's rotation question carries (switchboard/lib/rotation.py)."""
    return rotation.fingerprint(secret, _ROTATION_PURPOSE)


def rotate_secret_if_current(source_id: int, fingerprint: str) -> tuple[Source, str | None]:
    """Rotate the secret only if it is still the one ``fingerprint`` names; return the source and
    the new secret, or ``None`` when it was rotated meanwhile (a reloaded or concurrent POST)."""
    with transaction.atomic():
        source = Source.objects.select_for_update().get(pk=source_id)
        if not rotation.still_current(source.secret, _ROTATION_PURPOSE, fingerprint):
            return source, None
        return source, rotate_secret(source)


def delete_source(source: Source) -> None:
    """Delete ``source`` with its rules and events; todos created from its events stay."""
    source.delete()


def delete_sources(queryset: QuerySet[Source]) -> None:
    """Delete every source of ``queryset`` as ``delete_source`` does."""
    for source in queryset:
        delete_source(source)


# --- rules -----------------------------------------------------------------------------------


RULE_TIME_FIELDS = (
    "priority",
    "delay_seconds",
    "start_within_seconds",
    "finish_within_seconds",
    "run_timeout_seconds",
    "dedupe_key_path",
    "max_cost_usd",
)


def create_rule(
    source: Source,
    endpoint: Endpoint,
    *,
    queue: str,
    match: Any = None,
    name: str = "",
    title_template: str = "",
    work_order_template: str = "",
    max_attempts: int = 5,
    position: int | None = None,
    enabled: bool = True,
    **time: Any,
) -> Rule:
    """Add a rule to ``source``: after the last one, or at ``position``.

    Raise ``ValidationError`` (by field) for what intake could not route (``Rule.clean``).
    ``time`` sets the time on the todos it creates: ``priority``, ``delay_seconds``,
    ``start_within_seconds``, ``finish_within_seconds``, ``run_timeout_seconds``,
    ``dedupe_key_path``, ``max_cost_usd`` (the ``Rule`` fields of those names).
    """
    unknown = set(time) - set(RULE_TIME_FIELDS)
    if unknown:
        raise TypeError(f"create_rule() got unexpected arguments: {', '.join(sorted(unknown))}")
    if position is None:
        last = source.rules.aggregate(last=Max("position"))["last"]
        position = 0 if last is None else last + POSITION_STEP
    rule = Rule(
        source=source,
        endpoint=endpoint,
        queue=queue,
        match={} if match is None else match,
        name=name,
        title_template=title_template,
        work_order_template=work_order_template,
        max_attempts=max_attempts,
        position=position,
        enabled=enabled,
        **time,
    )
    rule.full_clean()
    rule.save()
    return rule


@dataclass(frozen=True, slots=True)
class Overlap:
    """Another enabled rule of the same source that a delivery can match together with a rule:
    ``broader`` (the other matches every delivery the rule does), ``narrower`` (the rule matches
    every delivery the other does) or ``same`` (both)."""

    other: Rule
    relation: Literal["same", "broader", "narrower"]


def overlaps(rule: Rule) -> list[Overlap]:
    """The enabled rules of ``rule``'s source, other than ``rule``, whose match contains or is
    contained in ``rule``'s (``routing.covers``), in the order they are tried. A delivery both
    match becomes two todos, which is seldom what was meant. Rules whose match no longer parses
    are left out (intake skips them)."""
    found: list[Overlap] = []
    others = Rule.objects.filter(source_id=rule.source_id, enabled=True).exclude(pk=rule.pk)
    for other in others.select_related("endpoint").order_by("position", "id"):
        try:
            broader = routing.covers(other.match, rule.match)
            narrower = routing.covers(rule.match, other.match)
        except routing.InvalidMatch:
            continue
        if broader and narrower:
            found.append(Overlap(other, "same"))
        elif broader or narrower:
            found.append(Overlap(other, "broader" if broader else "narrower"))
    return found


def update_rule(rule: Rule) -> Rule:
    """Store an edited ``rule`` after ``create_rule``'s checks; raise ``ValidationError``.

    The next delivery is routed by the new version. A position change is how rules are
    reordered: they are tried in ascending position, then by id.
    """
    if rule.pk is None:
        raise ValueError("update_rule stores an existing rule; create_rule adds one")
    rule.full_clean()
    rule.save()
    return rule


def set_rule_enabled(rule: Rule, enabled: bool) -> bool:
    """Enable or disable ``rule``; return whether that changed anything."""
    changed = Rule.objects.filter(pk=rule.pk).exclude(enabled=enabled).update(enabled=enabled)
    rule.enabled = enabled
    return bool(changed)


def delete_rule(rule: Rule) -> None:
    """Delete ``rule``. Events keep its id in their routing traces; no todo refers to it."""
    rule.delete()


def delete_rules(queryset: QuerySet[Rule]) -> None:
    """Delete every rule of ``queryset`` as ``delete_rule`` does."""
    for rule in queryset:
        delete_rule(rule)
