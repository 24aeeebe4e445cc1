"""The Board's todo list, its new-todo form, and what acts on many todos at once: bulk actions
on the list's filter, queue pauses.

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

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from switchboard import actors
from switchboard.lib import jsonlimits
from switchboard.lib.actors import Actor
from switchboard.lib.errors import InvalidInput
from switchboard.lib.guards import BoardRequest, login_required
from switchboard.models import Endpoint
from switchboard.scope import Scope, owned_by
from todos import lifecycle, limits, queries
from todos.pages import (
    BulkAct,
    bulk_page,
    error_message,
    list_filters,
    list_query,
    possible_id,
    scope,
    text,
)
from todos.states import State
from todos.types import TodoView

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


def _sort_links(filters: queries.TodoFilters) -> dict[str, tuple[str, str]]:
    """Per sortable column, the query its header links to and the arrow it shows now: a click
    on the column in force turns its direction round, on another sorts by it."""
    links = {}
    for column, first in SORTABLE_COLUMNS.items():
        current = filters.order.lstrip("-") == column
        target = filters.order.removeprefix("-") if filters.order.startswith("-") else ""
        sort = (target or f"-{column}") if current else first
        arrow = ("↓" if filters.order.startswith("-") else "↑") if current else ""
        links[column] = (list_query(replace(filters, sort=sort)), arrow)
    return links


def _live_url(filters: queries.TodoFilters, page: queries.TodoPage, *, insert: bool) -> str:
    """The list's socket (activity/live.py ``ListWatch``): its filters, its rows, and where new
    rows go: on top of a newest-first first page, down to the last row's creation when another
    page follows; otherwise only counted, and only those created after this paint."""
    params = filters.to_params() | {"rows": ",".join(t.id for t in page.todos)}
    if insert:
        params["insert"] = "1"
        if page.next_cursor is not None and page.todos:
            params["floor"] = page.todos[-1].created_at.isoformat()
    else:
        params["floor"] = timezone.now().isoformat()
    return f"/ws/live/?{urlencode(params)}"


@login_required
@require_GET
def todo_list(request: BoardRequest) -> HttpResponse:
    """The human's todos, filtered, searched and sorted (newest first unless asked), with
    per-state counts; rows open the drawer. Filters it cannot read are said on the page, and
    match nothing (``TodoFilters``)."""
    filters = list_filters(request)
    after = queries.Cursor.decode(request.GET.get("after", ""))  # malformed: from the top
    page = queries.todo_page(scope(request), filters, after, size=queries.PAGE_SIZE)
    counts = queries.state_counts(scope(request), filters)
    endpoints = Endpoint.objects.filter(scope(request).endpoints()).only("slug", "revoked_at")
    base = filters.without_state()
    tabs = [("all", "all", counts["all"], list_query(base))]
    tabs += [(s.value, s.value, counts[s.value], list_query(base, state=s.value)) for s in State]
    tabs.append(("dead", "dead letter", counts["dead_letter"], list_query(base, dead="1")))
    current_tab = "dead" if filters.dead_letter else (filters.state or "all")
    paused = queries.paused_queues(scope(request), known=actors.viewer(request.user))
    live_insert = after is None and filters.order == queries.DEFAULT_SORT
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
            "next_query": list_query(filters, after=page.next_cursor.encode())
            if page.next_cursor
            else None,
            "first_query": list_query(filters) if after else None,
            "live_url": _live_url(filters, page, insert=live_insert),
            "live_insert": live_insert,
            "query": list_query(filters),
            # The human's paused queues, and whether the filter names one queue to pause.
            "paused": paused,
            "queue_paused": any(
                p.endpoint.slug == filters.endpoint and p.queue == filters.queue for p in paused
            ),
        },
    )


# --- bulk actions and queue pauses ------------------------------------------------------------

QUEUE_CONFIRM = "todos/queue_confirm.html"


def _bulk_act(action: str) -> BulkAct:
    """The lifecycle call behind the list's bulk ``retry`` and ``cancel`` (Forget is the trail
    app's: ``activity/views.py``, since it erases spans too)."""

    def act(request: BoardRequest, filters: queries.TodoFilters, seen_at: dt.datetime) -> Any:
        if action == "retry":
            return lifecycle.bulk_retry(request.user.id, filters, seen_at=seen_at)
        return lifecycle.bulk_cancel(
            request.user.id, filters, seen_at=seen_at, reason=text(request, "reason")
        )

    return act


@login_required
def bulk_action(request: BoardRequest, action: str) -> HttpResponse:
    """A bulk retry or cancel on the list's current filter (``todos.pages.bulk_page``)."""
    if action not in ("retry", "cancel"):
        raise Http404("no such bulk action")  # an address that is no page, not a todo
    return bulk_page(request, action, _bulk_act(action))


@login_required
def queue_action(request: BoardRequest, action: str) -> HttpResponse:
    """Pause or resume one queue of one of the human's endpoints (``?endpoint=&queue=``).

    GET: the confirm page, with the queue's summary. POST: the change, then back to the list
    filtered on that queue.
    """
    if action == "limits":
        return queue_limits(request)
    if action not in ("pause", "resume"):
        raise Http404("no such queue action")  # an address that is no page, not a todo
    if request.method not in ("GET", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])
    slug = request.GET.get("endpoint", "").strip()
    queue = request.GET.get("queue", "").strip()
    context: dict[str, Any] = {
        "section": "todos",
        "action": action,
        "endpoint_slug": slug,
        "queue": queue,
        "query": list_query(queries.TodoFilters(endpoint=slug, queue=queue)),
    }
    endpoint = (
        Endpoint.objects.filter(owned_by(request.user.id), slug=slug).first()
        if slug and possible_id(slug)
        else None
    )
    try:
        if endpoint is None:
            raise InvalidInput("endpoint", "choose one of your endpoints")
        limits.check_queue(queue)
        if request.method == "POST":
            change = (lifecycle.pause_queue if action == "pause" else lifecycle.resume_queue)(
                endpoint.id, queue, human_id=request.user.id
            )
        else:
            scope = Scope.of_endpoint(endpoint.id)
            context["summary"] = queries.queue_summary(scope, queue)
            paused = queries.paused_queues(scope, [queue], known=actors.viewer(request.user))
            context["paused"] = next(iter(paused), None)
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


def _limit_field(request: BoardRequest, field: str) -> int | Decimal | None:
    """A limit as the form sent it: blank clears it; anything else must be a whole number (an
    amount of US dollars for the cost fields), as the admin's queue settings read it too
    (``lifecycle.limit_from_text``)."""
    return lifecycle.limit_from_text(field, request.POST.get(field, ""))


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
        "query": list_query(queries.TodoFilters(endpoint=slug, queue=queue)),
    }
    endpoint = (
        Endpoint.objects.filter(owned_by(request.user.id), slug=slug).first()
        if slug and possible_id(slug)
        else None
    )
    try:
        if endpoint is None:
            raise InvalidInput("endpoint", "choose one of your endpoints")
        limits.check_queue(queue)
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


# --- a new todo --------------------------------------------------------------------------------

_INSTANT_HELP = (
    "An ISO 8601 instant with a time zone (2026-01-02T09:00:00Z), or +90s, +10m, +2h, +1d."
)


class TodoForm(forms.Form):
    """A todo as ``lifecycle.create`` takes it, on one of the human's live endpoints. The form
    checks shapes (an integer, JSON); every bound is the lifecycle's own (``limits.check_time``),
    whose refusal lands on the field it names (``save``)."""

    endpoint = forms.ChoiceField(help_text="Its agents receive the todo; only your live endpoints.")
    queue = forms.CharField(max_length=limits.QUEUE_MAX_BYTES, strip=False)
    title = forms.CharField(required=False, max_length=limits.TITLE_MAX_BYTES)
    payload = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 5, "spellcheck": "false", "class": "mono"}),
        help_text="A JSON value (empty for {}).",
    )
    work_order = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="The instructions the agent reads.",
    )
    max_attempts = forms.IntegerField(
        initial=5,
        help_text=f"Claims before it is dead-lettered (1 to {limits.MAX_ATTEMPTS_LIMIT}).",
    )
    priority = forms.IntegerField(
        required=False,
        initial=0,
        help_text=f"Higher is claimed first ({limits.PRIORITY_MIN} to {limits.PRIORITY_MAX}).",
    )
    not_before = forms.CharField(
        required=False, label="Not before", help_text=f"Not claimable before it. {_INSTANT_HELP}"
    )
    start_by = forms.CharField(
        required=False, label="Start by", help_text="Dead-lettered if still unclaimed then."
    )
    finish_by = forms.CharField(
        required=False,
        label="Finish by",
        help_text="Dead-lettered if unfinished then; no lease runs past it.",
    )
    run_timeout_seconds = forms.IntegerField(
        required=False,
        label="Run timeout (seconds)",
        help_text=f"One attempt's limit (at least {limits.RUN_TIMEOUT_MIN_SECONDS}); empty: the"
        " queue's default, if any.",
    )
    dedupe_key = forms.CharField(
        required=False,
        strip=False,
        help_text="While a todo of the endpoint with this key is unfinished, that todo is"
        " returned instead of a new one.",
    )

    def __init__(self, endpoints: list[Endpoint], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.endpoints = {e.slug: e for e in endpoints}
        field = self.fields["endpoint"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [(e.slug, f"{e.slug} ({e.name})" if e.name else e.slug) for e in endpoints]

    def clean_payload(self) -> Any:
        text = self.cleaned_data["payload"].strip()
        if not text:
            return None
        try:
            return jsonlimits.loads(text)
        except ValueError as exc:
            raise forms.ValidationError(f"The payload {exc}.") from None

    def save(self) -> TodoView | None:
        """Create the todo through the lifecycle; None, with the refusal on its field, when it
        refuses (nothing is created)."""
        data = self.cleaned_data
        now = timezone.now()
        try:
            at = {
                name: limits.parse_instant(name, data[name], now)
                for name in ("not_before", "start_by", "finish_by")
            }
            return lifecycle.create(
                self.endpoints[data["endpoint"]].id,
                queue=data["queue"],
                title=data["title"],
                payload=data["payload"],
                work_order=data["work_order"],
                max_attempts=data["max_attempts"],
                priority=0 if data["priority"] is None else data["priority"],
                run_timeout_seconds=data["run_timeout_seconds"],
                dedupe_key=data["dedupe_key"] or None,
                not_before=at["not_before"],
                start_by=at["start_by"],
                finish_by=at["finish_by"],
            )
        except InvalidInput as exc:
            message = str(exc).removeprefix(f"{exc.field}: ")
            self.add_error(exc.field if exc.field in self.fields else None, message)
            return None


@login_required
@require_http_methods(["GET", "POST"])
def todo_new(request: BoardRequest) -> HttpResponse:
    """Create a todo on one of the live endpoints the human sees, its own and its teams'
    (``lifecycle.create``, as intake and ``manage.py enqueue`` do), then show it; a refusal is
    shown at its field, and an endpoint outside the scope is refused as an unknown one."""
    endpoints = list(
        Endpoint.objects.filter(owned_by(request.user.id), revoked_at__isnull=True).order_by("slug")
    )
    form = TodoForm(endpoints, request.POST or None)
    if request.method == "POST" and form.is_valid():
        todo = form.save()
        if todo is not None:
            if todo.deduplicated:
                messages.info(
                    request,
                    f"Nothing created: {todo.id} is unfinished with the dedupe key"
                    f" {todo.dedupe_key!r}.",
                )
            else:
                messages.success(request, f"Created {todo.id} on {todo.queue}.")
            return redirect("todo_detail", todo_id=todo.id)
    return render(request, "todos/todo_new.html", {"section": "todos", "form": form})
