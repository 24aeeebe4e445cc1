"""The Board's template tags: times as people read them, and lease holders by name.

``{% when t %}`` renders ``<time>`` with the relative time as its text ("3 min ago", "in 2 h")
and the absolute time, in UTC, as its tooltip (``title``); static/board.js keeps the text current
while the page stays open, from the ``datetime`` attribute, in the same words (:func:`relative`).
``{% lease t %}`` is a lease's end as a countdown ("4 min 12 s left", then "expired"), the
absolute time again in the tooltip; static/lease.js ticks it down every second from the seconds
left when the server rendered it, so the browser's clock never matters.
``{% took start end %}`` is a duration ("4 min 12 s"). ``{% holder todo.owner %}`` shows an
operator's lease as ``operator <username>`` instead of the stored ``human:<id>``, named by the
one resolver of actors (switchboard/actors.py).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from attempts.types import Usage
from switchboard import actors
from switchboard.lib import text
from switchboard.lib.actors import ENDPOINT, HUMAN, Actor

register = template.Library()

ABSOLUTE = "%Y-%m-%d %H:%M:%S UTC"


def relative(moment: dt.datetime, now: dt.datetime) -> str:
    """``moment`` from ``now`` in words: "just now", "42 s ago", "3 min ago", "5 h ago",
    "2 d ago", or "in …" for the future. static/board.js says the same in the browser."""
    seconds = (now - moment).total_seconds()
    ahead = seconds < 0
    seconds = abs(seconds)
    if seconds < 5:
        return "just now"
    if seconds < 60:
        amount = f"{int(seconds)} s"
    elif seconds < 3600:
        amount = f"{int(seconds // 60)} min"
    elif seconds < 48 * 3600:
        amount = f"{int(seconds // 3600)} h"
    else:
        amount = f"{int(seconds // 86400)} d"
    return f"in {amount}" if ahead else f"{amount} ago"


def duration(seconds: float) -> str:
    """A duration in at most two units: "0.4 s", "12 s", "4 min 12 s", "3 h 5 min", "2 d 4 h"."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"


@register.simple_tag
def when(moment: dt.datetime | None) -> SafeString | str:
    """``<time>`` with the relative time as text and the absolute time on hover."""
    if moment is None:
        return ""
    utc = moment.astimezone(dt.UTC)
    return format_html(
        '<time datetime="{}" title="{}" data-relative>{}</time>',
        utc.isoformat(),
        utc.strftime(ABSOLUTE),
        relative(utc, timezone.now()),
    )


def left(seconds: float) -> str:
    """A countdown in whole seconds: "4 min 12 s left", "12 s left", "expired" once it ran out.
    static/lease.js says the same in the browser."""
    whole = int(seconds)
    if whole <= 0:
        return "expired"
    # duration() shows tenths under 10 s; a countdown ticks in whole seconds.
    return f"{duration(whole) if whole >= 10 else f'{whole} s'} left"


@register.simple_tag
def lease(moment: dt.datetime | None) -> SafeString | str:
    """``<time>`` counting down to ``moment`` (a lease's end), the absolute time on hover."""
    if moment is None:
        return ""
    utc = moment.astimezone(dt.UTC)
    seconds = (utc - timezone.now()).total_seconds()
    return format_html(
        '<time datetime="{}" title="{}" data-lease-left="{}">{}</time>',
        utc.isoformat(),
        utc.strftime(ABSOLUTE),
        f"{seconds:.1f}",
        left(seconds),
    )


@register.simple_tag
def usage(row: Any) -> str:
    """A todo's or an attempt's cost and tokens (``attempts.types.Usage.label``): unpriced
    tokens say so, never $0."""
    return Usage.from_row(row).label()


@register.filter
def money(value: Any) -> str:
    """A sum in USD (a cap, a budget) as every cost on the Board reads
    (``switchboard/lib/text.money``)."""
    return text.money(value)


@register.simple_tag
def cost(row: Any) -> str:
    """A todo's cost alone (the todo list's column): ``$0.14``, ``unpriced``, or ``—``. Reads
    only the columns the list's statement selects (``todos/sql/todo_page.sql``)."""
    found = Usage(
        input_tokens=row.input_tokens or 0,
        output_tokens=row.output_tokens or 0,
        unpriced_tokens=row.unpriced_tokens or 0,
        cost_usd=row.cost_usd or Decimal(0),
    )
    return found.cost_label() if found.any else "—"


@register.simple_tag
def took(start: dt.datetime | None, end: dt.datetime | None) -> str:
    """How long from ``start`` to ``end`` (empty when either is missing)."""
    if start is None or end is None:
        return ""
    return duration(max(0.0, (end - start).total_seconds()))


@register.simple_tag(takes_context=True)
def holder(
    context: template.Context, owner: str | None, endpoint: Any = None, claimant: str | None = None
) -> SafeString | str:
    """A lease holder as people know it: the ``claimant`` label its agent sent with the claim,
    when it sent one (the holder's name on hover), else its name."""
    name = holder_name(context, owner, endpoint)
    if claimant:
        return format_html('<span class="claimant" title="{}">{}</span>', name, claimant)
    return name


def holder_name(context: template.Context, owner: str | None, endpoint: Any = None) -> str:
    """A lease holder's name (``switchboard.actors.Names.holder``): ``operator
    <username>`` for ``human:<id>``, ``endpoint <slug>`` for ``endpoint:<uuid>``, any other
    owner as given. The logged-in human and ``endpoint`` (the todo's, when the page holds it)
    are named without a query; anyone else with one, once per render. A page that shows many
    holders names them all first, in one read, as ``holders`` in its context (the todo list)."""
    actor = Actor.parse_or_none(owner)
    if actor is None or actor.kind not in (HUMAN, ENDPOINT):
        return owner or ""
    holders = context.get("holders")
    if isinstance(holders, actors.Names):
        return holders.holder(owner)
    request = context.get("request")
    render: Any = context.render_context  # per render: one query per other actor at most
    known: dict[Actor, str] = render.setdefault("board_tags.holders", {})
    if not known:
        known.update(actors.viewer(getattr(request, "user", None)))
    if endpoint is not None:
        known[Actor.endpoint(endpoint.id)] = endpoint.slug
    names = actors.resolve([owner], known)
    known.update(names.found)
    known.setdefault(actor, "")  # looked up and gone: not looked up again in this render
    return names.holder(owner)
