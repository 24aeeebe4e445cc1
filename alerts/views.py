"""The Board's alerts page (the rail's bell): the open alerts, their history, and the
human's channels with their rules, last messages and a "send test alert" button.

Scoped to the channels the logged-in human owns (``alerts.channels.visible``); another human's
channel answers 404 exactly like an unknown one, staff included. The test button queues the
message through ``alerts.channels``; the sweeper sends it, never this request.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_POST

from alerts import channels
from alerts.models import Alert, AlertDelivery, AlertState
from switchboard.lib.guards import BoardRequest, login_required
from switchboard.scope import Scope

HISTORY = 50
LAST_MESSAGES = 5


@login_required
@require_GET
def alerts_page(request: BoardRequest) -> HttpResponse:
    mine = Scope.of_human(request.user.pk).own("channel__owner")
    live = Alert.objects.filter(mine).select_related("channel", "endpoint")
    owned = channels.visible(request.user)
    last: dict[object, list[AlertDelivery]] = {}
    for channel in owned:
        last[channel.pk] = list(channel.deliveries.order_by("-id")[:LAST_MESSAGES])
    return render(
        request,
        "alerts/alerts.html",
        {
            "section": "alerts",
            "open_alerts": list(live.filter(state=AlertState.OPEN).order_by("-opened_at")),
            "history": list(
                live.filter(state__in=[AlertState.RESOLVED, AlertState.EVENT]).order_by("-id")[
                    :HISTORY
                ]
            ),
            "channels": [(c, list(c.rules.select_related("endpoint")), last[c.pk]) for c in owned],
        },
    )


@login_required
@require_GET
def bell(request: BoardRequest) -> HttpResponse:
    """The rail's bell badge: the number of open alerts on the human's channels, or nothing.
    Fetched by the rail after the page loads (htmx), so no page pays a query for it."""
    count = Alert.objects.filter(
        Scope.of_human(request.user.pk).own("channel__owner"), state=AlertState.OPEN
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
def channel_test(request: BoardRequest, channel_id: str) -> HttpResponse:
    """Queue a test alert to one of the human's channels."""
    channel = channels.get_visible(request.user, channel_id)
    if channel is None:
        raise Http404("no such channel")
    channels.queue_test(channel)
    messages.success(
        request,
        f"Test alert queued for {channel}: the sweeper sends it within"
        f" {settings.SWITCHBOARD_SWEEP_INTERVAL_SECONDS} s; its answer appears below.",
    )
    return redirect("alerts")
