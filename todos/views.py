"""The Board's todo list and what acts on many todos at once: bulk actions on the list's
filter, queue pauses.

One todo's pages (the drawer, the trail page, operator actions) are in ``activity/views.py``;
what both share (the scope, the 404 answer, the drawer's context) is in ``todos/pages.py``.
Views parse, make one call (a read in ``todos.queries`` or a transition in ``todos.lifecycle``)
and render.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from switchboard import actors
from switchboard.lib.actors import Actor
from switchboard.lib.errors import InvalidInput
from switchboard.lib.guards import BoardRequest, login_required
from switchboard.models import Endpoint
from switchboard.scope import Scope
from todos import lifecycle, limits, queries
from todos.pages import error_message, not_found, possible_id, scope, text
from todos.states import State

# The list's sortable columns: the column, and the sort a first click asks for.
SORTABLE_COLUMNS = {"title": "title", "state": "state", "queue": "queue"}
SORTABLE_COLUMNS |= {"created": "-created", "updated": "-updated", "finished": "-finished"}
SORTABLE_COLUMNS |= {"cost": "-cost"}
SORT_CHOICES = [
    ("-created", "newest first"),
    ("created", "oldest first"),
    ("-updated", "recently updated"),
    ("updated", "least recently updated"),
    ("-finished", "recently finished"),
    ("finished", "finished longest ago"),
    ("title", "title A to Z"),
    ("-title", "title Z to A"),
    ("state", "state A to Z"),
    ("-state", "state Z to A"),
    ("queue", "queue A to Z"),
    ("-queue", "queue Z to A"),
    ("-cost", "costliest first"),
    ("cost", "cheapest first"),
]


def _filters(request: BoardRequest) -> queries.TodoFilters:
    """The list's filters from the query string: the list's, and the bulk actions' own."""
    return queries.TodoFilters.parse(request.GET)


def _query(filters: queries.TodoFilters, **extra: str) -> str:
    return urlencode(filters.to_params() | {k: v for k, v in extra.items() if v})


def _sort_links(filters: queries.TodoFilters) -> dict[str, tuple[str, str]]:
    """Per sortable column, the query its header links to and the arrow it shows now: a click
    on the column in force turns its direction round, on another sorts by it."""
    links = {}
    for column, first in SORTABLE_COLUMNS.items():
        current = filters.order.lstrip("-") == column
        target = filters.order.removeprefix("-") if filters.order.startswith("-") else ""
        sort = (target or f"-{column}") if current else first
        arrow = ("↓" if filters.order.startswith("-") else "↑") if current else ""
        links[column] = (_query(replace(filters, sort=sort)), arrow)
    return links


@login_required
@require_GET
def todo_list(request: BoardRequest) -> HttpResponse:
    """The human's todos, filtered, searched and sorted (newest first unless asked), with
    per-state counts; rows open the drawer. Filters it cannot read are said on the page, and
    match nothing (``TodoFilters``)."""
    filters = _filters(request)
    after = queries.Cursor.decode(request.GET.get("after", ""))  # malformed: from the top
    page = queries.todo_page(scope(request), filters, after, size=queries.PAGE_SIZE)
    counts = queries.state_counts(scope(request), filters)
    endpoints = Endpoint.objects.filter(owner_id=request.user.id).only("slug", "revoked_at")
    base = filters.without_state()
    tabs = [("all", "all", counts["all"], _query(base))]
    tabs += [(s.value, s.value, counts[s.value], _query(base, state=s.value)) for s in State]
    tabs.append(("dead", "dead letter", counts["dead_letter"], _query(base, dead="1")))
    current_tab = "dead" if filters.dead_letter else (filters.state or "all")
    paused = queries.paused_queues(scope(request))
    return render(
        request,
        "todos/todo_list.html",
        {
            "section": "todos",
            "filters": filters,
            "filter_errors": filters.errors,
            "queue_text": filters.to_params().get("queue", ""),
            "page": page,
            # The rows' lease holders by name: one read, none when the viewer and the rows' own
            # endpoints (each todo carries its endpoint) hold them all.
            "holders": actors.resolve(
                [t.owner for t in page.todos],
                {Actor.endpoint(t.endpoint.id): t.endpoint.slug for t in page.todos}
                | actors.viewer(request.user),
            ),
            "tabs": tabs,
            "current_tab": current_tab,
            "states": State.values,
            "endpoints": endpoints,
            "sorts": SORT_CHOICES,
            "sort_links": _sort_links(filters),
            "next_query": _query(filters, after=page.next_cursor.encode())
            if page.next_cursor
            else None,
            "first_query": _query(filters) if after else None,
            "query": _query(filters),
            # The human's paused queues, and whether the filter names one queue to pause.
            "paused": paused,
            "queue_paused": any(
                p.endpoint.slug == filters.endpoint and p.queue == filters.queue for p in paused
            ),
        },
    )


# --- bulk actions and queue pauses ------------------------------------------------------------

BULK_CONFIRM = "todos/bulk_confirm.html"
QUEUE_CONFIRM = "todos/queue_confirm.html"
# What each bulk action says: the verb, what it acts on, what it did.
BULK_WORDS = {
    "retry": ("Retry", "dead letters", "Retried"),
    "cancel": ("Cancel", "unfinished todos", "Canceled"),
}


def _seen_at(request: BoardRequest) -> dt.datetime:
    try:
        seen_at = dt.datetime.fromisoformat(request.POST.get("seen_at", ""))
    except ValueError:
        raise InvalidInput("seen_at", "must be the time of the count the page showed") from None
    if seen_at.tzinfo is None:
        raise InvalidInput("seen_at", "must carry its time zone")
    return seen_at


def _counted(request: BoardRequest) -> int | None:
    text = request.POST.get("counted", "")
    return int(text) if text.isdigit() and len(text) < 10 else None


@login_required
def bulk_action(request: BoardRequest, action: str) -> HttpResponse:
    """A bulk action on the list's current filter (its query string, on both requests).

    GET: the confirm page, with how many todos the action would change now (at most
    ``limits.BULK_MAX``, said when there are more). POST: the action, re-checking every todo
    against the count's time (``seen_at``), then back to the list with how many it changed.
    """
    if action not in BULK_WORDS:
        return not_found(request, action)
    if request.method not in ("GET", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])
    filters = _filters(request)
    verb, things, done = BULK_WORDS[action]
    context: dict[str, Any] = {
        "section": "todos",
        "action": action,
        "verb": verb,
        "things": things,
        "filters": filters,
        "query": _query(filters),
        "cap_text": f"{limits.BULK_MAX:,}",
    }
    if request.method == "POST":
        try:
            seen_at = _seen_at(request)
            if action == "retry":
                result = lifecycle.bulk_retry(request.user.id, filters, seen_at=seen_at)
            else:
                result = lifecycle.bulk_cancel(
                    request.user.id, filters, seen_at=seen_at, reason=text(request, "reason")
                )
        except InvalidInput as exc:
            context["error"] = error_message(exc)
            return render(request, BULK_CONFIRM, context, status=400)
        acted, counted = len(result.acted), _counted(request)
        notice = f"{done} {acted} {'todo' if acted == 1 else 'todos'}."
        if counted is not None and acted < min(counted, limits.BULK_MAX):
            notice += f" {min(counted, limits.BULK_MAX) - acted} of those counted had changed."
        messages.success(request, notice)
        return redirect(reverse("todo_list") + (f"?{context['query']}" if context["query"] else ""))
    count = queries.bulk_count(scope(request), filters, action, limits.BULK_MAX + 1)
    context |= {
        "count": min(count.n, limits.BULK_MAX),
        "count_text": f"{min(count.n, limits.BULK_MAX):,}",
        "more": count.n > limits.BULK_MAX,
        "seen_at": count.seen_at.isoformat(),
    }
    return render(request, BULK_CONFIRM, context)


@login_required
def queue_action(request: BoardRequest, action: str) -> HttpResponse:
    """Pause or resume one queue of one of the human's endpoints (``?endpoint=&queue=``).

    GET: the confirm page, with the queue's summary. POST: the change, then back to the list
    filtered on that queue.
    """
    if action == "limits":
        return queue_limits(request)
    if action not in ("pause", "resume"):
        return not_found(request, action)
    if request.method not in ("GET", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])
    slug = request.GET.get("endpoint", "").strip()
    queue = request.GET.get("queue", "").strip()
    context: dict[str, Any] = {
        "section": "todos",
        "action": action,
        "endpoint_slug": slug,
        "queue": queue,
        "query": _query(queries.TodoFilters(endpoint=slug, queue=queue)),
    }
    endpoint = (
        Endpoint.objects.filter(owner_id=request.user.id, slug=slug).first()
        if slug and possible_id(slug)
        else None
    )
    try:
        if endpoint is None:
            raise InvalidInput("endpoint", "choose one of your endpoints")
        limits.check_name("queue", queue)
        if request.method == "POST":
            change = (lifecycle.pause_queue if action == "pause" else lifecycle.resume_queue)(
                endpoint.id, queue, human_id=request.user.id
            )
        else:
            scope = Scope.of_endpoint(endpoint.id)
            context["summary"] = queries.queue_summary(scope, queue)
            context["paused"] = bool(queries.paused_queues(scope, [queue]))
    except InvalidInput as exc:
        context["error"] = error_message(exc)
        return render(request, QUEUE_CONFIRM, context, status=400)
    if request.method == "GET":
        return render(request, QUEUE_CONFIRM, context)
    where = f"{queue} on {slug}"
    if action == "pause":
        notice = f"Paused {where}." if change.changed else f"{where} was already paused."
    else:
        notice = f"Resumed {where}." if change.changed else f"{where} was not paused."
    messages.success(request, notice[0].upper() + notice[1:])
    return redirect(reverse("todo_list") + f"?{context['query']}")


QUEUE_LIMITS = "todos/queue_limits.html"
# The form's fields: the writer's keyword, its label.
LIMIT_FIELDS = {
    "max_in_flight": "Max in flight",
    "claims_per_minute": "Claims per minute",
    "run_timeout_seconds": "Default run timeout (seconds)",
    "default_max_cost_usd": "Default cost cap of a todo (USD)",
    "daily_budget_usd": "Daily budget (USD a UTC day; past it the queue pauses until the next)",
}
COST_FIELDS = frozenset({"default_max_cost_usd", "daily_budget_usd"})


def _limit_field(request: BoardRequest, field: str) -> int | Decimal | None:
    """A limit as the form sent it: blank clears it; anything else must be a whole number (an
    amount of US dollars for the cost fields)."""
    value = request.POST.get(field, "").strip()
    if not value:
        return None
    if field in COST_FIELDS:
        return limits.check_cost(field, value)
    if not value.lstrip("-").isdigit() or len(value) > 12:
        raise InvalidInput(field, "must be a whole number, or blank for no limit")
    return lifecycle.check_limit(field, int(value))


def queue_limits(request: BoardRequest) -> HttpResponse:
    """Show and set the limits of one queue of one of the human's endpoints
    (``queues/limits?endpoint=&queue=``): GET the form with the limits as they stand, POST all
    three (blank clears one), then back to the list filtered on that queue. A refused value is
    named beside its field; nothing is changed."""
    if request.method not in ("GET", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])
    slug = request.GET.get("endpoint", "").strip()
    queue = request.GET.get("queue", "").strip()
    context: dict[str, Any] = {
        "section": "todos",
        "endpoint_slug": slug,
        "queue": queue,
        "query": _query(queries.TodoFilters(endpoint=slug, queue=queue)),
    }
    endpoint = (
        Endpoint.objects.filter(owner_id=request.user.id, slug=slug).first()
        if slug and possible_id(slug)
        else None
    )
    try:
        if endpoint is None:
            raise InvalidInput("endpoint", "choose one of your endpoints")
        limits.check_name("queue", queue)
    except InvalidInput as exc:
        context["error"] = error_message(exc)
        return render(request, QUEUE_LIMITS, context, status=400)
    if request.method == "GET":
        rows = [
            r
            for r in queries.queue_limits(Scope.of_endpoint(endpoint.id), [queue])
            if r.endpoint_id == endpoint.id
        ]
        now = rows[0] if rows else None
        context["fields"] = [
            (
                field,
                label,
                "" if now is None or getattr(now, field) is None else getattr(now, field),
                "",
            )
            for field, label in LIMIT_FIELDS.items()
        ]
        return render(request, QUEUE_LIMITS, context)
    given: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for field in LIMIT_FIELDS:
        try:
            given[field] = _limit_field(request, field)
        except InvalidInput as exc:
            errors[field] = str(exc).split(": ", 1)[1]
    if not errors:
        try:
            done = lifecycle.set_queue_limits(endpoint.id, queue, human_id=request.user.id, **given)
        except InvalidInput as exc:
            errors[exc.field] = str(exc).split(": ", 1)[1]
    if errors:
        context["fields"] = [
            (field, label, request.POST.get(field, ""), errors.get(field, ""))
            for field, label in LIMIT_FIELDS.items()
        ]
        return render(request, QUEUE_LIMITS, context, status=400)
    where = f"{queue} on {slug}"
    messages.success(
        request, f"Set the limits of {where}." if done.changed else f"{where}: nothing changed."
    )
    return redirect(reverse("todo_list") + f"?{context['query']}")
