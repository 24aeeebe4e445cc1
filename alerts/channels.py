"""The only writer of alert channels and their rules (docs/guides/alerts.md).

The admin, the Board and ``manage.py alert`` call these, so a channel meets the same checks
wherever it is made: a webhook's URL must pass the push rings' SSRF guard
(``switchboard/lib/webhook_out.py``; a private, loopback or link-local target is refused unless
``SWITCHBOARD_PUSH_ALLOW_PRIVATE`` allows it), an email address must be one, and a rule's
endpoint must be one its channel's owner may see (``switchboard/scope.py``). A new channel
carries the default rules (``DEFAULT_KINDS``) on all of its owner's endpoints until narrowed.

A channel is owned by a human or by a team, as a source is (docs/decisions/0034-teams.md), and
is seen by its owner alone: the human, or every member of the team (``Scope.owned``).
``visible`` and ``get_visible`` are the reads every surface asks first, and anyone else's
channel is as unknown as one that never was. A team's channel hears about the team's endpoints
only (``scope.owner_endpoints``); it moves into a team as a source does (``move_channel``). A
disabled channel hears nothing and is sent nothing: disabling it fails what was still queued
for it (``drop_queued.sql``). A test message (``queue_test``) from a button is refused while the
channel is disabled or its breaker open, and more than once per ``TEST_EVERY_SECONDS``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from uuid import UUID

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import F, Prefetch, Window
from django.db.models.functions import RowNumber

from alerts.models import (
    DEFAULT_KINDS,
    AlertChannel,
    AlertDelivery,
    AlertRule,
    ChannelKind,
    RuleKind,
)
from switchboard.lib import jsonlimits, rotation, webhook_out
from switchboard.lib.errors import InvalidInput
from switchboard.lib.sql import fetch_all, fetch_one, load
from switchboard.lib.text import strip_control
from switchboard.models import Endpoint, Human, Team
from switchboard.scope import Scope, owner_endpoints
from switchboard.teams import check_move
from todos import limits
from todos.intake import routing

URL_MAX_CHARS = 2048
NAME_MAX_CHARS = 200
FOR_SECONDS_MAX = 30 * 24 * 3600
# The kinds whose T is their whole condition: without one they would fire at once.
_NEEDS_FOR = frozenset({RuleKind.OLDEST_PENDING, RuleKind.SILENT_CLAIM})
TEST_EVERY_SECONDS = 10  # at most one test message per channel from a button in this many seconds
LAST_MESSAGES = 5  # the messages the Board lists per channel

_SQL = Path(__file__).resolve().parent / "sql"
QUEUE_TEST = load(_SQL, "queue_test")
DROP_QUEUED = load(_SQL, "drop_queued")


def _plain(field: str, value: str) -> str:
    """``value`` if PostgreSQL text holds it and no control character hides in it (a form's
    ``%00`` would otherwise fail the write, not the check)."""
    if jsonlimits.text_problem(value) is not None or strip_control(value) != value:
        raise InvalidInput(field, "must not contain control characters")
    return value


def check_url(url: str, *, allow_private: bool | None = None) -> str:
    """The webhook URL as stored; ``InvalidInput`` for one the sender would refuse."""
    url = url.strip()
    if not url or len(url) > URL_MAX_CHARS:
        raise InvalidInput("url", f"a webhook URL of 1 to {URL_MAX_CHARS} characters")
    _plain("url", url)
    if allow_private is None:
        allow_private = settings.SWITCHBOARD_PUSH_ALLOW_PRIVATE
    try:
        webhook_out.resolve(url, allow_private=allow_private)
    except webhook_out.TargetRefused as exc:
        raise InvalidInput("url", str(exc).replace("push URL", "webhook URL")) from None
    return url


def check_name(name: str) -> str:
    """The channel's name as stored; ``InvalidInput`` for one too long or hiding a control
    character."""
    name = _plain("name", name.strip())
    if len(name) > NAME_MAX_CHARS:
        raise InvalidInput("name", f"at most {NAME_MAX_CHARS} characters")
    return name


def check_email(address: str) -> str:
    address = _plain("email", address.strip())
    try:
        validate_email(address)
    except ValidationError:
        raise InvalidInput("email", f"not an email address: {address[:100]!r}") from None
    return address


def visible(human: Human) -> list[AlertChannel]:
    """The channels ``human`` may see and act on: their own and their teams' (``Scope.owned``)."""
    return list(
        AlertChannel.objects.filter(Scope.of_human(human.pk).owned()).order_by("created_at")
    )


@dataclass(frozen=True, slots=True)
class Listed:
    """One of the human's channels as the Board lists it."""

    channel: AlertChannel
    rules: list[AlertRule]
    last: list[AlertDelivery]  # its newest LAST_MESSAGES messages, newest first
    breaker_open_until: dt.datetime | None  # its circuit breaker holds messages until then


def listed(human: Human, *, now: dt.datetime) -> list[Listed]:
    """The channels ``human`` sees (their own and their teams') with their owner, rules,
    newest messages and breaker, oldest channel first, in three queries however many channels
    there are."""
    owned = list(
        AlertChannel.objects.filter(Scope.of_human(human.pk).owned())
        .select_related("circuit", "owner", "team")
        .prefetch_related(Prefetch("rules", queryset=AlertRule.objects.select_related("endpoint")))
        .order_by("created_at", "id")
    )
    last: dict[UUID, list[AlertDelivery]] = {c.pk: [] for c in owned}
    if owned:
        newest = (
            AlertDelivery.objects.filter(channel__in=[c.pk for c in owned])
            .annotate(
                rank=Window(RowNumber(), partition_by=F("channel_id"), order_by=F("id").desc())
            )
            .filter(rank__lte=LAST_MESSAGES)
            .order_by("channel_id", "-id")
        )
        for delivery in newest:
            last[delivery.channel_id].append(delivery)
    return [Listed(c, list(c.rules.all()), last[c.pk], _breaker_until(c, now)) for c in owned]


def _breaker_until(channel: AlertChannel, now: dt.datetime) -> dt.datetime | None:
    try:
        circuit = channel.circuit
    except AlertChannel.circuit.RelatedObjectDoesNotExist:
        return None
    return circuit.open_until if circuit.open_until and circuit.open_until > now else None


def get_visible(human: Human, channel_id: UUID | str) -> AlertChannel | None:
    """The channel ``channel_id`` if ``human`` sees it (their own or their teams'); None for an
    unknown or foreign id alike, or one that is not an id."""
    try:
        key = UUID(str(channel_id))
    except ValueError:
        return None
    return AlertChannel.objects.filter(Scope.of_human(human.pk).owned(), id=key).first()


def add_channel(
    owner: Human | None,
    *,
    team: Team | None = None,
    webhook: str | None = None,
    email: str | None = None,
    name: str = "",
    allow_private: bool | None = None,
) -> tuple[AlertChannel, str | None]:
    """Add a webhook or email channel with the default rules; (channel, its signing secret for
    a webhook, to be shown once). It is owned by ``owner`` or, with ``owner`` None, by
    ``team`` (exactly one)."""
    if (owner is None) == (team is None):
        raise ValueError("a channel is owned by a human or by a team, exactly one")
    if (webhook is None) == (email is None):
        raise InvalidInput("channel", "give a webhook URL or an email address, one of them")
    name = check_name(name)
    secret = None
    if webhook is not None:
        url = check_url(webhook, allow_private=allow_private)
        secret = routing.new_standard_secret()
        channel = AlertChannel(kind=ChannelKind.WEBHOOK, url=url, secret=secret)
    else:
        channel = AlertChannel(kind=ChannelKind.EMAIL, email=check_email(email or ""))
    channel.owner, channel.team = owner, team
    channel.name = name
    with transaction.atomic():
        channel.save()
        AlertRule.objects.bulk_create(
            AlertRule(channel=channel, kind=kind) for kind in DEFAULT_KINDS
        )
    return channel, secret


def update_channel(
    channel: AlertChannel,
    *,
    name: str | None = None,
    url: str | None = None,
    email: str | None = None,
    enabled: bool | None = None,
    allow_private: bool | None = None,
) -> AlertChannel:
    """Change a channel's name, target or switch; the target is checked as at creation."""
    if name is not None:
        channel.name = check_name(name)
    if url is not None:
        if channel.kind != ChannelKind.WEBHOOK:
            raise InvalidInput("url", "an email channel has no URL")
        channel.url = check_url(url, allow_private=allow_private)
    if email is not None:
        if channel.kind != ChannelKind.EMAIL:
            raise InvalidInput("email", "a webhook channel has no email address")
        channel.email = check_email(email)
    if enabled is not None:
        channel.enabled = enabled
    with transaction.atomic():
        channel.save()
        if enabled is False:
            fetch_all(DROP_QUEUED, {"channel_id": channel.pk})
    return channel


def rotate_secret(channel: AlertChannel) -> str:
    """A new signing secret for a webhook channel, returned to be shown once."""
    if channel.kind != ChannelKind.WEBHOOK:
        raise InvalidInput("channel", "an email channel has no signing secret")
    channel.secret = routing.new_standard_secret()
    channel.save(update_fields=["secret"])
    return channel.secret


_ROTATION_PURPOSE = "switchboard.alerts.secret"


def secret_fingerprint(secret: str) -> str:
    """The fingerprint a channel's rotation question carries (switchboard/lib/rotation.py)."""
    return rotation.fingerprint(secret, _ROTATION_PURPOSE)


def rotate_secret_if_current(channel_id: UUID, fingerprint: str) -> tuple[AlertChannel, str | None]:
    """Rotate the webhook channel's secret only if it is still the one ``fingerprint`` names;
    return the channel and the new secret, or ``None`` when it was rotated meanwhile (a reloaded
    or concurrent POST). Its messages already queued are signed when sent, with the new one."""
    with transaction.atomic():
        channel = AlertChannel.objects.select_for_update().get(pk=channel_id)
        if not rotation.still_current(channel.secret or "", _ROTATION_PURPOSE, fingerprint):
            return channel, None
        return channel, rotate_secret(channel)


def move_channel(channel: AlertChannel, team: Team, *, by: Human | None) -> AlertChannel:
    """Give ``channel`` to ``team``, as ``credentials.move_endpoint`` gives an endpoint: refused
    (``switchboard.teams.TeamRefused``, nothing changed) unless ``by`` (None: the system)
    administers ``team`` and manages the channel. Its rules then hear about the team's
    endpoints only: a rule narrowed to an endpoint outside the team stays, and hears nothing
    until that endpoint is the team's."""
    with transaction.atomic():
        row = AlertChannel.objects.select_for_update().get(pk=channel.pk)
        check_move(row, team, by=by)
        row.owner, row.team = None, team
        row.save(update_fields=["owner", "team"])
    channel.owner, channel.team = None, team
    return channel


def remove_channel(channel: AlertChannel) -> None:
    channel.delete()


def check_rule(rule: AlertRule, channel: AlertChannel) -> None:
    """``InvalidInput`` for a rule the evaluators could not honour on ``channel``: its endpoint
    must be one the channel's owner sees (``scope.owner_endpoints``: a team's, for a team's
    channel)."""
    if rule.kind not in RuleKind.values:
        raise InvalidInput("kind", f"one of {', '.join(RuleKind.values)}")
    if rule.endpoint_id is not None:
        owned = Endpoint.objects.filter(owner_endpoints(channel), id=rule.endpoint_id)
        if not owned.exists():
            raise InvalidInput("endpoint", "no endpoint of the channel's owner has that id")
    if rule.queue is not None:
        queue = limits.check_queue(rule.queue)
        if queue != queue.strip():
            raise InvalidInput("queue", "no spaces around a queue's name")
        if rule.kind == RuleKind.PUSH_BREAKER:
            raise InvalidInput("queue", "a push breaker is an endpoint's, not a queue's")
    if not 0 <= rule.for_seconds <= FOR_SECONDS_MAX:
        raise InvalidInput("for_seconds", f"0 to {FOR_SECONDS_MAX} seconds")
    if rule.kind in _NEEDS_FOR and rule.for_seconds < 1:
        raise InvalidInput("for_seconds", f"{rule.kind} needs a time T of 1 second or more")
    if rule.kind == RuleKind.DEPTH:
        if rule.threshold is None or rule.threshold < 0:
            raise InvalidInput("threshold", "depth needs a threshold N of 0 or more")
    elif rule.threshold is not None:
        raise InvalidInput("threshold", "only a depth rule has a threshold")


def add_rule(
    channel: AlertChannel,
    kind: str,
    *,
    endpoint: Endpoint | None = None,
    queue: str | None = None,
    threshold: int | None = None,
    for_seconds: int = 0,
) -> AlertRule:
    """Add a rule to ``channel`` (checked by ``check_rule``)."""
    rule = AlertRule(
        channel=channel,
        kind=kind,
        endpoint=endpoint,
        queue=queue,
        threshold=threshold,
        for_seconds=for_seconds,
    )
    check_rule(rule, channel)
    rule.save()
    return rule


def save_rule(rule: AlertRule) -> AlertRule:
    """Save a rule changed in place (the admin's form), checked first."""
    check_rule(rule, rule.channel)
    rule.save()
    return rule


def narrow(
    channel: AlertChannel, kind: str, *, endpoint: Endpoint, queue: str | None = None
) -> None:
    """Narrow the channel's rules of ``kind`` to one endpoint (and queue)."""
    rules = list(channel.rules.filter(kind=kind))
    if not rules:
        add_rule(channel, kind, endpoint=endpoint, queue=queue)
        return
    for rule in rules:
        rule.endpoint, rule.queue = endpoint, queue
        save_rule(rule)


def remove_rule(rule: AlertRule) -> None:
    rule.delete()


@dataclass(frozen=True, slots=True)
class QueuedTest:
    """What "send test alert" did: ``queued`` (with the message's id), or why not."""

    outcome: Literal["queued", "gone", "disabled", "breaker_open", "throttled"]
    delivery_id: int | None = None


def queue_test(channel: AlertChannel, *, guarded: bool = True) -> QueuedTest:
    """Queue a test message to the channel for the sweeper to send (``queue_test.sql``).
    ``guarded`` (a button): refused while the channel is disabled or its breaker is open, and
    within ``TEST_EVERY_SECONDS`` of its last test. Unguarded (``manage.py alert test``, which
    sends it at once): queued whatever the breaker."""
    row = fetch_one(
        QUEUE_TEST,
        {"channel_id": channel.pk, "every_seconds": TEST_EVERY_SECONDS, "guarded": guarded},
    )
    if row is None:
        return QueuedTest("gone")
    if row["id"] is not None:
        return QueuedTest("queued", row["id"])
    if row["disabled"]:
        return QueuedTest("disabled")
    if row["breaker_open"]:
        return QueuedTest("breaker_open")
    return QueuedTest("throttled")
