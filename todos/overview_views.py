"""The Board's Overview page (``/overview/``): per endpoint and queue in the human's scope, what
waits, what runs, what failed, how fast it moves; and plots of throughput and queue depth.

Parse → one read (``todos.overview.overview``: the sweeper's rollups, the bounded live depth and
the cost per queue) →
render. An htmx request (the page's own poll, every ``REFRESH_SECONDS``) gets the page's body
partial only: the rollups change when the sweeper samples, so a poll is as live as the data.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any
from urllib.parse import urlencode

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET

from switchboard import actors
from switchboard.lib import jsonlimits, svgplot, text
from switchboard.lib.guards import BoardRequest, login_required
from switchboard.scope import Scope
from switchboard.templatetags.board_tags import duration
from todos import markup, overview
from todos.overview import Overview, Percentiles, Point, QueueRow

TEMPLATE = "overview/overview.html"
REFRESH_SECONDS = 15
# A sample older than this says the sweeper is not running (or not rolling up).
STALE_SECONDS = 120


def seconds_text(seconds: float | None) -> str:
    """A percentile's duration: sub-second and seconds with a decimal, longer as the Board's."""
    if seconds is None:
        return "—"
    if seconds < overview.FLOOR_SECONDS:
        return f"< {overview.FLOOR_SECONDS:g} s"
    if seconds < 10:
        return f"{seconds:.1f} s"
    return duration(seconds)


@dataclass(frozen=True, slots=True)
class Latency:
    n: int
    p50: str
    p95: str


@dataclass(frozen=True, slots=True)
class Row:
    queue: QueueRow
    oldest_age: str
    completed_hour: str
    failed_hour: str
    completed_day: str
    failed_day: str
    wait_hour: Latency
    run_hour: Latency
    wait_day: Latency
    run_day: Latency
    selected: bool
    cost_today: str = "—"
    cost_day: str = "—"


def _latency(p: Percentiles | None) -> Latency:
    if p is None:
        return Latency(0, "—", "—")
    return Latency(p.n, seconds_text(p.p50), seconds_text(p.p95))


def rate_text(count: int, minutes: int) -> str:
    """``count`` per minute over ``minutes``: two decimals, and never 0.00 for a non-zero count."""
    if count == 0:
        return "0"
    rate = count / minutes
    return "< 0.01" if rate < 0.005 else f"{rate:.2f}"


def _row(q: QueueRow, now: dt.datetime, endpoint: str, queue: str) -> Row:
    hour_minutes, day_minutes = overview.window_minutes(now)
    age = ""
    if q.pending and q.oldest_pending_at is not None:
        age = duration(max(0.0, (now - q.oldest_pending_at).total_seconds()))
    return Row(
        queue=q,
        oldest_age=age,
        completed_hour=rate_text(q.completed_hour, hour_minutes),
        failed_hour=rate_text(q.failed_hour, hour_minutes),
        completed_day=rate_text(q.completed_day, day_minutes),
        failed_day=rate_text(q.failed_day, day_minutes),
        wait_hour=_latency(q.latency.get(("hour", "wait"))),
        run_hour=_latency(q.latency.get(("hour", "run"))),
        wait_day=_latency(q.latency.get(("day", "wait"))),
        run_day=_latency(q.latency.get(("day", "run"))),
        selected=(q.endpoint, q.queue) == (endpoint, queue),
        cost_today=text.spent(q.cost_today, q.unpriced_day),
        cost_day=text.spent(q.cost_day, q.unpriced_day),
    )


def _cost_chart(points: list[overview.CostPoint]) -> Chart:
    """The last day's cost per hour, in cents (a started cent counts one, so a small cost
    still shows)."""
    labels = [p.at.astimezone(dt.UTC).strftime("%H:%M") for p in points]
    cents = [int((p.cost_usd * 100).to_integral_value(rounding=ROUND_CEILING)) for p in points]
    total = sum((p.cost_usd for p in points), Decimal(0))
    unpriced = sum(p.unpriced_tokens for p in points)
    return Chart(
        key="cost-day",
        title="Cost, last day",
        description=(
            f"What the model calls that arrived in each hour cost, in cents, last day (UTC):"
            f" {text.money(total)} in all"
            + (f", and {unpriced:,} tokens no price covers." if unpriced else ".")
        ),
        plot=svgplot.stacked_bars(labels, [("bar-cost", "cents", cents)], label_every=4),
        legend=[("bar-cost", "cost, cents per hour")],
    )


@dataclass(frozen=True, slots=True)
class Chart:
    """One plot as the page shows it: its SVG geometry, its accessible name and description,
    and the numbers drawn (the table under it)."""

    key: str
    title: str
    description: str
    plot: svgplot.Plot
    legend: list[tuple[str, str]]

    @property
    def svg(self) -> SafeString:
        return markup.svg(self.plot, self.key, self.title, self.description)


def _labels(points: Sequence[Point]) -> list[str]:
    return [p.at.astimezone(dt.UTC).strftime("%H:%M") for p in points]


def _charts(key: str, span: str, points: list[Point], label_every: int) -> list[Chart]:
    labels = _labels(points)
    completed = [p.completed for p in points]
    failed = [p.failed for p in points]
    pending = [p.pending for p in points]
    in_flight = [p.in_flight for p in points]
    bin_words = (
        "per minute"
        if points and points[0].minutes == 1
        else (f"per {points[0].minutes} minutes" if points else "")
    )
    known = [v for v in pending if v is not None]
    return [
        Chart(
            key=f"throughput-{key}",
            title=f"Throughput, {span}",
            description=(
                f"Attempts completed and failed {bin_words}, {span} (UTC):"
                f" {sum(completed):,} completed, {sum(failed):,} failed."
            ),
            plot=svgplot.stacked_bars(
                labels,
                [("bar-completed", "completed", completed), ("bar-failed", "failed", failed)],
                label_every=label_every,
            ),
            legend=[("bar-completed", "completed"), ("bar-failed", "failed")],
        ),
        Chart(
            key=f"depth-{key}",
            title=f"Queue depth, {span}",
            description=(
                f"Todos pending and in flight {bin_words} (an hour: its highest sample),"
                f" {span} (UTC):"
                + (
                    f" pending from {min(known):,} to {max(known):,}, now {known[-1]:,}."
                    if known
                    else " no samples."
                )
            ),
            plot=svgplot.lines(
                labels,
                [("line-pending", "pending", pending), ("line-in-flight", "in flight", in_flight)],
                label_every=label_every,
            ),
            legend=[("line-pending", "pending"), ("line-in-flight", "in flight")],
        ),
    ]


def _filter(request: BoardRequest, name: str) -> str | None:
    """A filter's value ('' for none), or None when it is text PostgreSQL cannot hold."""
    value = request.GET.get(name, "").strip()
    return None if jsonlimits.text_problem(value) else value


def context(request: BoardRequest) -> tuple[dict[str, Any], int]:
    """Parse the filters, read the Overview once, shape it; and the status to answer (400 for
    a filter that names no queue: the page then shows all queues and says why)."""
    endpoint, queue = _filter(request, "endpoint"), _filter(request, "queue")
    error, status = None, 200
    if endpoint is None or queue is None or bool(endpoint) != bool(queue):
        error, status = "Choose a queue from the table: endpoint and queue, both or neither.", 400
        endpoint = queue = ""
    assert endpoint is not None and queue is not None
    data: Overview = overview.overview(
        Scope.of_human(request.user.id), endpoint, queue, actors.viewer(request.user)
    )
    now = timezone.now()
    rows = [_row(q, now, endpoint, queue) for q in data.queues]
    focus = f"{endpoint} / {queue}" if endpoint else "all queues"
    stale = data.sampled_at is not None and (now - data.sampled_at).total_seconds() > STALE_SECONDS
    return {
        "section": "overview",
        "rows": rows,
        "totals": {
            name: sum(getattr(q, name) for q in data.queues)
            for name in ("pending", "in_flight", "retry_due", "dead")
        }
        | {
            "cost_today": text.spent(
                sum((q.cost_today for q in data.queues), Decimal(0)),
                sum(q.unpriced_day for q in data.queues),
            )
        },
        "focus": focus,
        "endpoint": endpoint,
        "queue": queue,
        "error": error,
        "sampled_at": data.sampled_at,
        "stale": stale,
        "refresh_seconds": REFRESH_SECONDS,
        "refresh_url": reverse("overview")
        + (f"?{urlencode({'endpoint': endpoint, 'queue': queue})}" if endpoint else ""),
        "hour": _charts("hour", "last hour", data.hour, label_every=10),
        "cost_chart": _cost_chart(data.cost),
        "day": _charts("day", "last day", data.day, label_every=4),
        "plotted": [
            ("Last hour", markup.plotted_rows(data.hour)),
            ("Last day", markup.plotted_rows(data.day)),
        ],
    }, status


@login_required
@require_GET
def overview_page(request: BoardRequest) -> HttpResponse:
    """The Overview; for htmx (the page's poll), its body only."""
    ctx, status = context(request)
    template = f"{TEMPLATE}#body" if request.htmx else TEMPLATE
    return render(request, template, ctx, status=status)
