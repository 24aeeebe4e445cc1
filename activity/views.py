"""The pages of what happened: one todo's (``/todos/<id>``: the drawer for htmx, otherwise the
trail page, and the operator actions posted from either) and the Activity feed's
(``/activity/``: what happened across the human's todos, newest first).

The trail page reads the todo's trail once (``activity.trail.todo_trail``) and draws it with
``activity/markup.py``, the builders the live pushes use too (``activity/live.py``). Domain
errors are mapped here and nowhere else: ``TodoNotFound`` → 404, ``LeaseConflict`` → 409,
``InvalidInput`` → 400, each rendered inline in the drawer (htmx is configured in base.html to
swap those three) or on the trail page, never Django's error page.

The feed: parse the filters and the cursor, make one read (``activity.feed.feed_page``),
render. Every parameter is untrusted: an unknown kind or outcome means "any", a cursor that
does not decode starts the feed over, and a value PostgreSQL text cannot hold matches nothing;
none of them is an error. Opening the first page marks the feed read
(``humans.activity_seen_at``, written only when that changes what the badge counts); turning
pages does not.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.contrib import messages
from django.http import HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from activity import feed, forget
from activity.context_processors import mark_read
from activity.markup import trail_blocks, trail_rows
from activity.trail import todo_trail
from switchboard import actors
from switchboard.lib.actors import Actor
from switchboard.lib.errors import InvalidInput, LeaseConflict, TodoNotFound
from switchboard.lib.guards import BoardRequest, login_required
from switchboard.lib.text import whole_number
from switchboard.models import Endpoint
from switchboard.scope import Scope, owned_by
from todos import lifecycle, queries, states
from todos.filters import TodoFilters
from todos.intake.traces import present_trace
from todos.pages import (
    DRAWER,
    ROW,
    bulk_page,
    drawer_context,
    error_message,
    not_found,
    possible_id,
    text,
)
from todos.present import outcome_badge, pretty
from todos.types import BulkResult

KIND_WORDS = {
    "attempt_end": "attempt ended",
    "note": "note",
    "human_action": "Board action",
    "retried": "retried",
    "a2a_state": "A2A",
    "deadline": "deadline",
    "budget": "cost cap",
}


def _filters(request: BoardRequest) -> feed.FeedFilters:
    return feed.FeedFilters.parse(
        endpoint=request.GET.get("endpoint", ""),
        queue=request.GET.get("queue", ""),
        kind=request.GET.get("kind", ""),
        outcome=request.GET.get("outcome", ""),
    )


def _query(filters: feed.FeedFilters, **extra: str) -> str:
    params = {
        "endpoint": filters.endpoint,
        "queue": filters.queue,
        "kind": filters.kind,
        "outcome": filters.outcome,
        **extra,
    }
    return urlencode({k: v for k, v in params.items() if v})


@dataclass(frozen=True, slots=True)
class EntryRow:
    """An entry as the feed shows it."""

    entry: feed.FeedEntry
    kind_word: str
    outcome_word: str
    outcome_class: str


def _row(entry: feed.FeedEntry) -> EntryRow:
    word, css = outcome_badge(entry.outcome) if entry.kind == feed.ATTEMPT_END else ("", "")
    return EntryRow(entry, KIND_WORDS.get(entry.kind, entry.kind), word, css)


def _mark_read(request: BoardRequest, filters: feed.FeedFilters, page: feed.FeedPage) -> None:
    """The first page was opened: everything up to now is read.

    The write is skipped when it would change nothing the badge counts: the unfiltered first
    page shows the newest entry, and it is no newer than the last visit. So a human who keeps
    the feed open and reloads it does not write their row on every load.
    """
    seen = request.user.activity_seen_at
    newest = page.entries[0].at if page.entries else None
    unfiltered = filters == feed.FeedFilters()
    if seen is None or not unfiltered or (newest is not None and newest > seen):
        feed.mark_seen(request.user.id)
    mark_read(request)


@login_required
@require_GET
def activity_feed(request: BoardRequest) -> HttpResponse:
    """The human's feed, newest first, filtered, a page at a time; each entry links to its
    place on its todo's trail page."""
    filters = _filters(request)
    after = feed.Cursor.decode(request.GET.get("after", ""))
    page = feed.feed_page(
        request.user.id, filters, after, size=feed.PAGE_SIZE, known=actors.viewer(request.user)
    )
    if after is None:
        _mark_read(request, filters, page)
    endpoints = Endpoint.objects.filter(owned_by(request.user.id)).only("slug", "revoked_at")
    return render(
        request,
        "activity/feed.html",
        {
            "section": "activity",
            "filters": filters,
            "rows": [_row(e) for e in page.entries],
            "endpoints": endpoints,
            "kinds": [(k, KIND_WORDS[k]) for k in feed.KINDS],
            "outcomes": [(o, outcome_badge(o)[0]) for o in feed.OUTCOMES],
            "next_query": _query(filters, after=page.next_cursor.encode())
            if page.next_cursor
            else None,
            "first_query": _query(filters) if after else None,
        },
    )


# --- one todo: the drawer, the trail page, operator actions ------------------------------------


@login_required
@require_GET
def todo_detail(request: BoardRequest, todo_id: str) -> HttpResponse:
    """The drawer for htmx (the list's side panel); otherwise the trail page, the todo's story."""
    if not possible_id(todo_id):
        return not_found(request, todo_id)
    if not request.htmx:
        return trail_page(request, todo_id)
    try:
        context = drawer_context(request, todo_id, section="todos")
    except TodoNotFound:
        return not_found(request, todo_id)
    # Only the list loads the drawer with htmx.
    context["in_list"] = True
    return render(request, DRAWER, context)


def trail_page(
    request: BoardRequest, todo_id: str, *, error: str | None = None, status: int = 200
) -> HttpResponse:
    """The trail page: the todo, its operator actions, and its timeline (activity/trail.py).

    A fixed number of queries whatever the number of attempts and activity rows: the trail's
    four reads, plus the session, the user and the rail's unread count.
    """
    try:
        trail = todo_trail(request.user.id, todo_id, actors.viewer(request.user))
    except TodoNotFound:
        return not_found(request, todo_id)
    todo, event = trail.todo, trail.event
    now = timezone.now()
    rows = trail_rows(trail, now)
    verification = event.verification if event and isinstance(event.verification, dict) else {}
    context = {
        "section": "todos",
        "page": True,
        "todo": todo,
        "trail": trail,
        "holders": trail.names,  # the lease's holder among the trail's names (no query)
        "blocks": trail_blocks(trail, rows),
        # The buttons the statements would accept; they still decide.
        "actions": states.operator_actions(
            todo, now, endpoint_revoked=todo.endpoint.revoked_at is not None
        ),
        "error": error,
        # Autoescaped where rendered: payloads, headers and results are untrusted input.
        "payload_json": pretty(todo.payload),
        "result_json": None if todo.result is None else pretty(todo.result),
        "event": event,
        "event_trace": present_trace(event.routing_trace) if event else [],
        "verification": str(verification.get("result") or "—"),
        "verification_json": pretty(event.verification) if event else "",
        "headers_json": pretty(event.headers) if event else "",
        "event_payload_json": pretty(event.payload) if event else "",
        "forgotten_by_name": trail.names.label(todo.forgotten_by),
    }
    return render(request, "todos/todo_detail.html", context, status=status)


# --- operator actions --------------------------------------------------------------------------


def _ttl(request: BoardRequest) -> int | None:
    given = request.POST.get("lease_ttl_seconds", "").strip()
    if not given:
        return None
    seconds = whole_number(given, 9)
    if seconds is None:
        raise InvalidInput("lease_ttl_seconds", "must be a whole number of seconds")
    return seconds


def _claim(request: BoardRequest, human_id: int, todo_id: str) -> Any:
    claimant = text(request, "claimant") or f"{request.user.get_username()} on the Board"
    return lifecycle.operator_claim(
        human_id, todo_id, lease_ttl_seconds=_ttl(request), claimant=claimant
    )


def _answer(request: BoardRequest, human_id: int, todo_id: str) -> Any:
    """Answer an interrupted todo's question (A2A input-required): the holder resumes and
    reads the answer under ``input_request.response`` (docs/guides/a2a.md)."""
    answer = text(request, "answer")
    if answer is None:
        raise InvalidInput("answer", "must not be empty")
    response = {"text": answer, "from": str(Actor.human(human_id))}
    return lifecycle.resume(human_id, todo_id, response=response)


def _forget(request: BoardRequest, human_id: int, todo_id: str) -> None:
    """Forget one finished todo (activity/forget.py), once the operator ticked that they
    understand; ``LeaseConflict`` when it is not finished or already forgotten."""
    if request.POST.get("understood") != "on":
        raise InvalidInput("understood", "tick the box: forgetting erases the todo's content")
    if not forget.forget(human_id, [todo_id]):
        queries.todo_in_scope(Scope.of_human(human_id), todo_id)  # TodoNotFound when not theirs
        raise LeaseConflict(todo_id, "forget")


def _bulk_forget(request: BoardRequest, filters: TodoFilters, seen_at: dt.datetime) -> BulkResult:
    return forget.bulk_forget(request.user.id, filters, seen_at=seen_at)


@login_required
def bulk_forget(request: BoardRequest) -> HttpResponse:
    """Forget the finished todos of the list's filter (todos.pages.bulk_page's confirm step)."""
    return bulk_page(request, "forget", _bulk_forget)


ACTIONS: dict[str, tuple[str, Callable[[BoardRequest, int, str], Any]]] = {
    "claim": ("Claimed.", _claim),
    "complete": (
        "Completed.",
        lambda r, h, t: lifecycle.operator_complete(h, t, summary=text(r, "summary")),
    ),
    "fail": (
        "Failed.",
        lambda r, h, t: lifecycle.operator_fail(
            h, t, summary=text(r, "summary"), retryable=r.POST.get("retryable") == "on"
        ),
    ),
    "release": (
        "Released back to its queue.",
        lambda r, h, t: lifecycle.operator_release(h, t, summary=text(r, "summary")),
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
        lambda r, h, t: lifecycle.operator_cancel(h, t, reason=text(r, "reason")),
    ),
    "answer": ("Answered; the holder resumes.", _answer),
    "forget": ("Forgotten: its content is erased; this tombstone stays.", _forget),
}


def _outcome_notice(action: str, result: Any, done: str) -> str:
    """The notice for an action that succeeded: a release that ended the todo's last allowed
    attempt dead-lettered it (docs/decisions/0012-release-budget.md), and says so."""
    if action == "release" and getattr(result.todo, "dead_letter", False):
        return "Released on its last allowed attempt: dead-lettered (Retry gives a fresh budget)."
    if action == "extend":
        return _extended(result.todo)
    return done


def _extended(todo: Any) -> str:
    """What an extend did: the lease's end, and when it is its run's deadline (no lease runs
    past the run timeout or finish_by), that it could go no further."""
    until = todo.lease_expires_at
    if until is None:
        return "Lease extended."
    stamp = until.astimezone(dt.UTC).strftime("%H:%M:%S UTC")
    if until == states.run_deadline(todo):
        return (
            f"The lease runs to {stamp}, its run's deadline (run timeout or finish_by):"
            " it cannot be extended past it."
        )
    return f"Lease extended to {stamp}."


@login_required
def todo_action(request: BoardRequest, todo_id: str, action: str) -> HttpResponse:
    """POST one operator action; answer the re-rendered drawer (and, for htmx, the row)."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if action not in ACTIONS or not possible_id(todo_id):
        return not_found(request, todo_id)
    done, call = ACTIONS[action]
    status = 200
    error = None
    try:
        result = call(request, request.user.id, todo_id)
    except TodoNotFound:
        return not_found(request, todo_id)
    except LeaseConflict as exc:
        status, error = 409, error_message(exc)
    except InvalidInput as exc:
        status, error = 400, error_message(exc)
    else:
        done = _outcome_notice(action, result, done)
    if not request.htmx and error is None:
        messages.success(request, done)
        return redirect("todo_detail", todo_id=todo_id)
    if not request.htmx:
        return trail_page(request, todo_id, error=error, status=status)
    try:
        context = drawer_context(request, todo_id, section="todos", error=error)
    except TodoNotFound:  # deleted by retention between the action and this read
        return not_found(request, todo_id)
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
