"""The Board's todo pages: the list, the drawer (the list's side panel), the trail page (one
todo's whole story), operator actions.

Views parse, make one call (a read in ``todos.queries`` or a transition in ``todos.lifecycle``)
and render. Domain errors are mapped here and nowhere else: ``TodoNotFound`` → 404,
``LeaseConflict`` → 409, ``InvalidInput`` → 400, each rendered inline in the drawer (htmx is
configured in base.html to swap those three), never Django's error page.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.contrib import messages
from django.http import HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from activity.trail import Trail, todo_trail
from attempts.models import DIED_OUTCOMES, ClaimerKind, Outcome
from attempts.types import AttemptView
from switchboard.lib import jsonlimits
from switchboard.lib.board import BoardRequest, login_required
from switchboard.lib.errors import InvalidInput, LeaseConflict, LifecycleError, TodoNotFound
from switchboard.models import Endpoint
from switchboard.scope import Scope
from todos import lifecycle, queries, states
from todos.intake.board import present_trace
from todos.models import Todo
from todos.states import State

DRAWER = "todos/todo_detail.html#drawer"
ROW = "todos/todo_list.html#row"

# --- presentation ----------------------------------------------------------------------------

_OUTCOME_WORDS = {
    Outcome.LEASE_EXPIRED: "died: lease expired, taken over",
    Outcome.REAPED: "died: lease expired, reaped",
    Outcome.FAILED: "failed: reported by its holder",
    Outcome.COMPLETED: "completed",
    Outcome.RELEASED: "released",
    Outcome.CANCELED: "canceled",
    Outcome.REVOKED: "revoked with its endpoint",
}


@dataclass(frozen=True, slots=True)
class AttemptRow:
    """An attempt as the drawer shows it."""

    view: AttemptView
    claimer: str
    duration: str
    outcome_word: str
    outcome_class: str
    artifact_link: bool

    @property
    def died(self) -> bool:
        return self.view.outcome in DIED_OUTCOMES

    @property
    def failed(self) -> bool:
        return self.view.outcome == Outcome.FAILED


def _duration(start: dt.datetime, end: dt.datetime) -> str:
    seconds = max(0, int((end - start).total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def outcome_badge(outcome: str | None) -> tuple[str, str]:
    """An attempt's outcome as its badge shows it, words and class, the same on the drawer,
    the trail page and the Activity feed: died and failed told apart."""
    if outcome is None:
        return "in progress", "outcome-open"
    if outcome in DIED_OUTCOMES:
        return _OUTCOME_WORDS[Outcome(outcome)], "outcome-died"
    if outcome in Outcome.values:
        return _OUTCOME_WORDS.get(Outcome(outcome), outcome), f"outcome-{outcome}"
    return outcome, "outcome-other"


def _attempt_row(a: AttemptView, todo: Todo, now: dt.datetime) -> AttemptRow:
    if a.claimer_kind == ClaimerKind.OWNER:
        claimer = f"operator {a.owner}"
    elif a.claimer_endpoint_id == todo.endpoint_id:
        claimer = f"endpoint {todo.endpoint.slug}"
    else:  # not expected (claims are scoped to the todo's endpoint), but say what is stored
        claimer = f"endpoint {a.claimer_endpoint_id}"
    word, css = outcome_badge(a.outcome)
    end = a.ended_at or now
    return AttemptRow(
        view=a,
        claimer=claimer,
        duration=_duration(a.claimed_at, end) + ("" if a.ended_at else " so far"),
        outcome_word=word,
        outcome_class=css,
        artifact_link=bool(a.artifact) and urlsplit(a.artifact or "").scheme == "https",
    )


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _drawer_context(request: BoardRequest, todo_id: str, **extra: Any) -> dict[str, Any]:
    # The newest 200 attempts at most; the drawer says how many stored ones it leaves out.
    data = queries.todo_detail(_scope(request), todo_id, queries.ATTEMPTS_LIMIT_MAX)
    now = timezone.now()
    stored = data.history.total - data.history.pruned
    revoked = data.todo.endpoint.revoked_at is not None
    return {
        "todo": data.todo,
        "attempts": [_attempt_row(a, data.todo, now) for a in data.history.attempts],
        "attempts_total": data.history.total,
        "attempts_pruned": data.history.pruned,
        "attempts_not_shown": max(0, stored - len(data.history.attempts)),
        # The buttons the statements would accept; they still decide.
        "actions": states.operator_actions(data.todo, now, endpoint_revoked=revoked),
        # Autoescaped where rendered: payloads and results are untrusted input.
        "payload_json": _pretty(data.todo.payload),
        "result_json": None if data.todo.result is None else _pretty(data.todo.result),
        **extra,
    }


# --- pages -----------------------------------------------------------------------------------


def _scope(request: BoardRequest) -> Scope:
    return Scope.of_human(request.user.id)


# The list's sortable columns: the column, and the sort a first click asks for.
SORTABLE_COLUMNS = {"title": "title", "state": "state", "queue": "queue"}
SORTABLE_COLUMNS |= {"created": "-created", "updated": "-updated", "finished": "-finished"}
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
]


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
    filters = queries.TodoFilters.parse(request.GET)
    after = queries.Cursor.decode(request.GET.get("after", ""))  # malformed: from the top
    page = queries.todo_page(_scope(request), filters, after, size=queries.PAGE_SIZE)
    counts = queries.state_counts(_scope(request), filters)
    endpoints = Endpoint.objects.filter(owner_id=request.user.id).only("slug", "revoked_at")
    base = filters.without_state()
    tabs = [("all", "all", counts["all"], _query(base))]
    tabs += [(s.value, s.value, counts[s.value], _query(base, state=s.value)) for s in State]
    tabs.append(("dead", "dead letter", counts["dead_letter"], _query(base, dead="1")))
    current_tab = "dead" if filters.dead_letter else (filters.state or "all")
    return render(
        request,
        "todos/todo_list.html",
        {
            "section": "todos",
            "filters": filters,
            "filter_errors": filters.errors,
            "queue_text": filters.to_params().get("queue", ""),
            "page": page,
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
        },
    )


def possible_id(todo_id: str) -> bool:
    """Whether ``todo_id`` could name a todo: one PostgreSQL cannot compare (NUL, a lone
    surrogate) names none, and asking would be a server error."""
    return jsonlimits.text_problem(todo_id) is None


def _not_found(request: BoardRequest, todo_id: str) -> HttpResponse:
    template = "todos/todo_detail.html#missing" if request.htmx else "todos/todo_missing.html"
    return render(request, template, {"section": "todos", "todo_id": todo_id}, status=404)


@login_required
@require_GET
def todo_detail(request: BoardRequest, todo_id: str) -> HttpResponse:
    """The drawer for htmx (the list's side panel); otherwise the trail page, the todo's story."""
    if not possible_id(todo_id):
        return _not_found(request, todo_id)
    if not request.htmx:
        return _trail_page(request, todo_id)
    try:
        context = _drawer_context(request, todo_id, section="todos")
    except TodoNotFound:
        return _not_found(request, todo_id)
    # Only the list loads the drawer with htmx.
    context["in_list"] = True
    return render(request, DRAWER, context)


def trail_rows(trail: Trail, now: dt.datetime) -> dict[int, AttemptRow]:
    """The trail's attempts as its page shows them, by seq: the first paint's and the live
    updates' (activity/live.py), so both say the same of a claim or an end."""
    rows: dict[int, AttemptRow] = {}
    for a in trail.attempts:
        row = _attempt_row(a.view, trail.todo, now)
        if a.claimer_name:  # an operator's claim: the human's name, not "human:<id>"
            row = replace(row, claimer=f"operator {a.claimer_name}")
        rows[a.view.seq] = row
    return rows


def _trail_page(
    request: BoardRequest, todo_id: str, *, error: str | None = None, status: int = 200
) -> HttpResponse:
    """The trail page: the todo, its operator actions, and its timeline (activity/trail.py).

    A fixed number of queries whatever the number of attempts and activity rows: the trail's
    four reads, plus the session, the user and the rail's unread count.
    """
    try:
        trail = todo_trail(request.user.id, todo_id)
    except TodoNotFound:
        return _not_found(request, todo_id)
    todo, event = trail.todo, trail.event
    now = timezone.now()
    rows = trail_rows(trail, now)
    verification = event.verification if event and isinstance(event.verification, dict) else {}
    context = {
        "section": "todos",
        "page": True,
        "todo": todo,
        "trail": trail,
        "blocks": [
            (b, rows.get(b.group.seq), trail.waterfalls.get(b.group.seq))
            if b.group
            else (b, None, None)
            for b in trail.blocks
        ],
        "attempts_total": todo.attempts_total,
        "attempts_pruned": todo.attempts_pruned,
        "attempts_not_shown": trail.attempts_not_shown,
        # The buttons the statements would accept; they still decide.
        "actions": states.operator_actions(
            todo, now, endpoint_revoked=todo.endpoint.revoked_at is not None
        ),
        "error": error,
        # Autoescaped where rendered: payloads, headers and results are untrusted input.
        "payload_json": _pretty(todo.payload),
        "result_json": None if todo.result is None else _pretty(todo.result),
        "event": event,
        "event_trace": present_trace(event.routing_trace) if event else [],
        "verification": str(verification.get("result") or "—"),
        "verification_json": _pretty(event.verification) if event else "",
        "headers_json": _pretty(event.headers) if event else "",
        "event_payload_json": _pretty(event.payload) if event else "",
    }
    return render(request, "todos/todo_detail.html", context, status=status)


# --- operator actions --------------------------------------------------------------------------


def _ttl(request: BoardRequest) -> int | None:
    text = request.POST.get("lease_ttl_seconds", "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise InvalidInput("lease_ttl_seconds", "must be a whole number of seconds") from None


def _text(request: BoardRequest, name: str) -> str | None:
    return request.POST.get(name, "").strip() or None


def _claim(request: BoardRequest, human_id: int, todo_id: str) -> Any:
    claimant = _text(request, "claimant") or f"{request.user.get_username()} on the Board"
    return lifecycle.operator_claim(
        human_id, todo_id, lease_ttl_seconds=_ttl(request), claimant=claimant
    )


def _answer(request: BoardRequest, human_id: int, todo_id: str) -> Any:
    """Answer an interrupted todo's question (A2A input-required): the holder resumes and
    reads the answer under ``input_request.response`` (docs/guides/a2a.md)."""
    text = _text(request, "answer")
    if text is None:
        raise InvalidInput("answer", "must not be empty")
    response = {"text": text, "from": f"human:{request.user.get_username()}"}
    return lifecycle.resume(human_id, todo_id, response=response)


ACTIONS: dict[str, tuple[str, Callable[[BoardRequest, int, str], Any]]] = {
    "claim": ("Claimed.", _claim),
    "complete": (
        "Completed.",
        lambda r, h, t: lifecycle.operator_complete(h, t, summary=_text(r, "summary")),
    ),
    "fail": (
        "Failed.",
        lambda r, h, t: lifecycle.operator_fail(
            h, t, summary=_text(r, "summary"), retryable=r.POST.get("retryable") == "on"
        ),
    ),
    "release": (
        "Released back to its queue.",
        lambda r, h, t: lifecycle.operator_release(h, t, summary=_text(r, "summary")),
    ),
    "extend": (
        "Lease extended.",
        lambda r, h, t: lifecycle.operator_extend(h, t, lease_ttl_seconds=_ttl(r)),
    ),
    "retry": (
        "Sent back to pending with a fresh budget.",
        lambda r, h, t: lifecycle.operator_retry(h, t),
    ),
    "cancel": (
        "Canceled.",
        lambda r, h, t: lifecycle.operator_cancel(h, t, reason=_text(r, "reason")),
    ),
    "answer": ("Answered; the holder resumes.", _answer),
}


def _outcome_notice(action: str, result: Any, done: str) -> str:
    """The notice for an action that succeeded: a release that ended the todo's last allowed
    attempt dead-lettered it (docs/decisions/0012-release-budget.md), and says so."""
    if action == "release" and getattr(result.todo, "dead_letter", False):
        return "Released on its last allowed attempt: dead-lettered (Retry gives a fresh budget)."
    return done


def _error_message(exc: LifecycleError) -> str:
    if isinstance(exc, LeaseConflict):
        return (
            f"Could not {exc.transition.removeprefix('operator_')}: the todo has moved on since"
            " this page was drawn (another holder, or a state that does not allow it)."
            " It is shown as it is now."
        )
    return f"Nothing changed: {exc}."


@login_required
def todo_action(request: BoardRequest, todo_id: str, action: str) -> HttpResponse:
    """POST one operator action; answer the re-rendered drawer (and, for htmx, the row)."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if action not in ACTIONS or not possible_id(todo_id):
        return _not_found(request, todo_id)
    done, call = ACTIONS[action]
    status = 200
    error = None
    try:
        result = call(request, request.user.id, todo_id)
    except TodoNotFound:
        return _not_found(request, todo_id)
    except LeaseConflict as exc:
        status, error = 409, _error_message(exc)
    except InvalidInput as exc:
        status, error = 400, _error_message(exc)
    else:
        done = _outcome_notice(action, result, done)
    if not request.htmx and error is None:
        messages.success(request, done)
        return redirect("todo_detail", todo_id=todo_id)
    if not request.htmx:
        return _trail_page(request, todo_id, error=error, status=status)
    try:
        context = _drawer_context(request, todo_id, section="todos", error=error)
    except TodoNotFound:  # deleted by retention between the action and this read
        return _not_found(request, todo_id)
    context["notice"] = done if error is None else None
    context["in_list"] = _from_the_list(request)
    body = render_to_string(DRAWER, context, request)
    if context["in_list"]:
        # The row, swapped out of band into the list the drawer sits beside.
        body += render_to_string(ROW, {"todo": context["todo"], "oob": True}, request)
    return HttpResponse(body, status=status)


def _from_the_list(request: BoardRequest) -> bool:
    """Whether the htmx request came from the list page (the only page with rows)."""
    return urlsplit(request.htmx.current_url or "").path == reverse("todo_list")
