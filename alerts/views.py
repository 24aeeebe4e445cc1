"""The Board's alerts page (the rail's bell): the open alerts, their history, and the human's
channels with their rules and last messages; adding a channel, its signing secret shown once,
"send test alert", disabling and deleting one; a channel is made for the human or for a team
they administer ("Owned by"), and moves into a team ("Move to team") only by a human who manages
it and administers the team (``switchboard.teams.check_move``), as sources and endpoints do;
moving, like deleting, asks first.

Scoped to the channels the logged-in human sees, their own and their teams'
(``alerts.channels.get_visible``); another
human's channel answers 404 exactly like an unknown one, staff included, and nothing changes.
Every change goes through ``alerts.channels``, the one writer the admin and ``manage.py alert``
call too: a webhook URL meets the push rings' SSRF guard there (a refused inside address names
``SWITCHBOARD_PUSH_ALLOW_PRIVATE``), and a test message is queued there, throttled and refused
while the channel's breaker is open; the sweeper sends it, never this request.

A webhook channel's signing secret is shown once: the POST that made it keeps it in the session
and redirects (``stash_shown_once``), and the page it redirects to takes it out and renders it
(``pop_shown_once``, never cached), so a reload shows it no more and makes nothing.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from alerts import channels
from alerts.models import Alert, AlertChannel, AlertState, ChannelKind
from switchboard.lib.errors import InvalidInput
from switchboard.lib.guards import (
    BoardRequest,
    confirmed,
    holds_secret,
    login_required,
    pop_shown_once,
    stash_shown_once,
)
from switchboard.lib.notfound import NotFound
from switchboard.models import Team
from switchboard.scope import Scope
from switchboard.team_moves import move_asked_first
from switchboard.teams import (
    administered,
    left_behind,
    roster,
)

HISTORY = 50
PAGE = "alerts/alerts.html"
# What the add form sends: the kind, and the target as typed (an URL or an address).
FORM_FIELDS = ("kind", "target", "name", "owned_by")


def _admin_teams(request: BoardRequest) -> list[Team]:
    """The teams the human administers: a channel may be made for, or moved into, these."""
    return administered(request.user.pk)


def _own_channel(request: BoardRequest, channel_id: str) -> AlertChannel:
    """The human's channel ``channel_id``; 404 for another's exactly as for an unknown one."""
    channel = channels.get_visible(request.user, channel_id)
    if channel is None:
        raise NotFound("Alert channel", channel_id, section="alerts")
    return channel


def _page(
    request: BoardRequest, form: dict[str, str] | None = None, errors: dict[str, str] | None = None
) -> dict[str, Any]:
    mine = Scope.of_human(request.user.pk).owned("channel__")
    live = Alert.objects.filter(mine).select_related("channel", "endpoint")
    return {
        "section": "alerts",
        "open_alerts": list(live.filter(state=AlertState.OPEN).order_by("-opened_at")),
        "history": list(
            live.filter(state__in=[AlertState.RESOLVED, AlertState.EVENT]).order_by("-id")[:HISTORY]
        ),
        "channels": channels.listed(request.user, now=timezone.now()),
        "form": form or {"kind": ChannelKind.WEBHOOK, "target": "", "name": "", "owned_by": ""},
        "admin_teams": [t.name for t in _admin_teams(request)],
        "errors": errors or {},
        "kinds": ChannelKind.choices,
        "test_every_seconds": channels.TEST_EVERY_SECONDS,
    }


@login_required
@require_GET
def alerts_page(request: BoardRequest) -> HttpResponse:
    return render(request, PAGE, _page(request))


@login_required
@require_GET
def bell(request: BoardRequest) -> HttpResponse:
    """The rail's bell badge: the number of open alerts on the human's channels, or nothing.
    Fetched by the rail after the page loads (htmx), so no page pays a query for it."""
    count = Alert.objects.filter(
        Scope.of_human(request.user.pk).owned("channel__"), state=AlertState.OPEN
    ).count()
    if not count:
        return HttpResponse("")
    shown = str(count) if count < 100 else "99+"
    return HttpResponse(
        format_html(
            ' <span class="badge unread" title="open alerts">{}'
            '<span class="visually-hidden"> open</span></span>',
            shown,
        )
    )


@login_required
@require_POST
def channel_add(request: BoardRequest) -> HttpResponse:
    """Add a webhook or email channel for the human, with the default rules. A refused value
    is named beside its field (400) and nothing is made; a webhook's secret is shown once."""
    # Cut past the longest value any field takes: a longer one is refused by its length.
    cap = channels.URL_MAX_CHARS + 1
    form = {name: str(request.POST.get(name, ""))[:cap] for name in FORM_FIELDS}
    kind, target = form["kind"], form["target"]
    team = None
    try:
        if kind not in ChannelKind.values:
            raise InvalidInput("kind", "a webhook or an email address")
        if form["owned_by"]:
            team = next((t for t in _admin_teams(request) if t.name == form["owned_by"]), None)
            if team is None:
                raise InvalidInput("owned_by", "you or a team you administer")
        channel, secret = channels.add_channel(
            None if team is not None else request.user,
            team=team,
            webhook=target if kind == ChannelKind.WEBHOOK else None,
            email=target if kind == ChannelKind.EMAIL else None,
            name=form["name"],
        )
    except InvalidInput as exc:
        field = exc.field if exc.field in FORM_FIELDS else "target"
        why = str(exc).split(": ", 1)[-1]
        return render(request, PAGE, _page(request, form, {field: why}), status=400)
    if secret is not None:
        stash_shown_once(request, "alert_secret", channel=str(channel.pk), secret=secret)
        return redirect("alert_channel_secret", channel_id=channel.pk)
    whose = f"team {team.name}'s" if team is not None else "your"
    messages.success(
        request,
        f"Added {channel}: it hears dead letters, missed deadlines and budgets on all of"
        f" {whose} endpoints.",
    )
    return redirect("alerts")


@login_required
@require_GET
def channel_secret(request: BoardRequest, channel_id: str) -> HttpResponse:
    """The new webhook channel's signing secret, once; a reload goes to the alerts page."""
    channel = _own_channel(request, channel_id)
    shown = pop_shown_once(request, "alert_secret", channel=str(channel.pk))
    if shown is None or not shown.get("secret"):
        messages.info(
            request,
            "A signing secret is shown only once. If it was not copied, rotate it: the channel"
            " then signs with a new one.",
        )
        return redirect("alerts")
    response = render(
        request,
        "alerts/channel_secret.html",
        {"section": "alerts", "channel": channel, "secret": shown["secret"]},
    )
    return holds_secret(response)


@login_required
@require_POST
def channel_rotate(request: BoardRequest, channel_id: str) -> HttpResponse:
    """Ask first; then give a webhook channel a new signing secret, shown once: the old one stops
    signing at once. A POST without ``confirm=yes`` (the page's button) shows the question."""
    channel = _own_channel(request, channel_id)
    if channel.kind != ChannelKind.WEBHOOK:
        messages.error(request, f"{channel} is an email channel: it has no signing secret.")
        return redirect("alerts")
    if not confirmed(request):
        # The question names the secret it was asked about: a reloaded answer rotates nothing.
        current = channels.secret_fingerprint(channel.secret or "")
        return render(
            request,
            "alerts/channel_rotate.html",
            {"section": "alerts", "channel": channel, "current": current},
        )
    current = str(request.POST.get("current", ""))[:64]
    channel, secret = channels.rotate_secret_if_current(channel.pk, current)
    if secret is None:
        messages.info(
            request,
            f"The secret of {channel} was already rotated from this page; a secret is shown only"
            " once. Rotate again if it was lost.",
        )
        return redirect("alerts")
    stash_shown_once(request, "alert_secret", channel=str(channel.pk), secret=secret)
    return redirect("alert_channel_secret", channel_id=channel.pk)


@login_required
@require_POST
def channel_test(request: BoardRequest, channel_id: str) -> HttpResponse:
    """Queue a test alert to one of the human's channels (refused while it is disabled or its
    breaker is open, and within ``channels.TEST_EVERY_SECONDS`` of its last test)."""
    channel = _own_channel(request, channel_id)
    queued = channels.queue_test(channel)
    if queued.outcome == "queued":
        messages.success(
            request,
            f"Test alert queued for {channel}: the sweeper sends it within"
            f" {settings.SWITCHBOARD_SWEEP_INTERVAL_SECONDS} s; its answer appears below.",
        )
    elif queued.outcome == "gone":
        raise NotFound("Alert channel", channel_id, section="alerts")
    elif queued.outcome == "disabled":
        messages.error(request, f"{channel} is disabled: enable it to send it a test.")
    elif queued.outcome == "breaker_open":
        messages.error(
            request,
            f"{channel}'s circuit breaker is open: nothing is sent to it until it closes"
            " (shown below).",
        )
    else:
        messages.error(
            request,
            f"A test alert was queued for {channel} less than {channels.TEST_EVERY_SECONDS} s"
            " ago; wait for its answer below.",
        )
    return redirect("alerts")


@login_required
@require_POST
def channel_enabled(request: BoardRequest, channel_id: str) -> HttpResponse:
    """Switch one of the human's channels on (``enabled=yes``) or off (``enabled=no``)."""
    channel = _own_channel(request, channel_id)
    value = request.POST.get("enabled")
    if value not in ("yes", "no"):
        return HttpResponse("enabled: yes or no", status=400, content_type="text/plain")
    channels.update_channel(channel, enabled=value == "yes")
    if channel.enabled:
        messages.success(request, f"{channel} is enabled: its rules are evaluated again.")
    else:
        messages.success(
            request,
            f"{channel} is disabled: it hears nothing and is sent nothing; messages still"
            " queued for it were dropped.",
        )
    return redirect("alerts")


@login_required
@require_http_methods(["GET", "POST"])
def channel_delete(request: BoardRequest, channel_id: str) -> HttpResponse:
    """Ask first; then delete one of the human's channels with its rules, alerts and messages.
    A request without ``confirm=yes`` (the page's button) shows the question."""
    channel = _own_channel(request, channel_id)
    if request.method == "POST" and confirmed(request):
        name = str(channel)
        channels.remove_channel(channel)
        messages.success(request, f"Deleted the channel {name}.")
        return redirect("alerts")
    return render(
        request,
        "alerts/channel_delete.html",
        {"section": "alerts", "channel": channel, "rules": channel.rules.count()},
    )


@login_required
@require_http_methods(["GET", "POST"])
def channel_move(request: BoardRequest, channel_id: str) -> HttpResponse:
    """Ask first; then give the channel to a team: only a human who manages it and administers
    the team (``channels.move_channel`` refuses anyone else, by name, and changes nothing). Its
    rules then hear about the team's endpoints only. A GET, or a POST without ``confirm=yes``
    (the page's "Move…"), is refused as the move would be, or shows what moves, who then sees
    and manages it and what its rules stop hearing: there is no way back to a person
    (docs/decisions/0034-teams.md), so it is said before, not after."""
    channel = _own_channel(request, channel_id)
    return move_asked_first(
        request,
        channel,
        move=lambda team: channels.move_channel(channel, team, by=request.user),
        question=lambda team: render(
            request, "alerts/channel_move.html", _move_question(channel, team)
        ),
        moved=lambda team: (
            f"Moved {channel} to team {team.name}: its members see and manage"
            " it, and its rules hear about the team's endpoints only."
        ),
        back=redirect("alerts"),
    )


def _move_question(channel: AlertChannel, team: Team) -> dict[str, Any]:
    """What moving ``channel`` into ``team`` takes along and who then reaches it: its rules, the
    team's members (every one manages a channel), those of the team that owned it who are not
    in ``team``, and its rules narrowed to an endpoint that is not the team's, which then hear
    nothing (``scope.owner_endpoints``)."""
    admins, members = roster(team)
    rules = channel.rules.select_related("endpoint").order_by("id")
    return {
        "section": "alerts",
        "channel": channel,
        "team": team,
        "rules": rules.count(),
        "people": admins + members,
        "leaving": left_behind(channel, team),
        "deafened": list(rules.filter(endpoint__isnull=False).exclude(endpoint__team=team)),
    }
