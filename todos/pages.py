"""What the Board's todo page modules share: the request's scope, the id check, the 404
answer, the drawer's context, the words of a refused action, the list's filter from a query
string, and the confirm-then-act page of a bulk action.

Below both page modules that show a todo (``todos/views.py``: the list, bulk actions and queue
pauses; ``activity/views.py``: the drawer, the trail page and the operator actions), so
neither imports the other.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone

from attempts.models import ClaimerKind
from switchboard import actors
from switchboard.lib import jsonlimits
from switchboard.lib.actors import Actor
from switchboard.lib.errors import InvalidInput, LeaseConflict, LifecycleError
from switchboard.lib.guards import BoardRequest
from switchboard.lib.text import whole_number
from switchboard.scope import Scope
from todos import limits, queries, states
from todos.present import attempt_row, pretty
from todos.types import BulkResult

DRAWER = "todos/todo_detail.html#drawer"
ROW = "todos/todo_list.html#row"


def scope(request: BoardRequest) -> Scope:
    """The logged-in human's scope: their endpoints' todos."""
    return Scope.of_human(request.user.id)


def possible_id(todo_id: str) -> bool:
    """Whether ``todo_id`` could name a todo: one PostgreSQL cannot compare (NUL, a lone
    surrogate) names none, and asking would be a server error."""
    return jsonlimits.text_problem(todo_id) is None


def not_found(request: BoardRequest, todo_id: str) -> HttpResponse:
    """404 for a todo that is unknown or not the human's: the drawer's fragment for htmx."""
    template = "todos/todo_detail.html#missing" if request.htmx else "todos/todo_missing.html"
    return render(request, template, {"section": "todos", "todo_id": todo_id}, status=404)


def drawer_context(request: BoardRequest, todo_id: str, **extra: Any) -> dict[str, Any]:
    """The drawer's context (``DRAWER``). Raises ``TodoNotFound`` outside the human's scope."""
    # The newest 200 attempts at most; the drawer says how many stored ones it leaves out.
    data = queries.todo_detail(scope(request), todo_id, queries.ATTEMPTS_LIMIT_MAX)
    now = timezone.now()
    stored = data.history.total - data.history.pruned
    revoked = data.todo.endpoint.revoked_at is not None
    # The lease's holder and operators' attempts by name: one read, none when the viewer and
    # the todo's endpoint are all they name.
    names = actors.resolve(
        [data.todo.owner]
        + [a.owner for a in data.history.attempts if a.claimer_kind == ClaimerKind.OWNER],
        {Actor.endpoint(data.todo.endpoint.id): data.todo.endpoint.slug}
        | actors.viewer(request.user),
    )
    return {
        "todo": data.todo,
        "holders": names,
        "attempts": [attempt_row(a, data.todo, now, names) for a in data.history.attempts],
        "attempts_total": data.history.total,
        "attempts_pruned": data.history.pruned,
        "attempts_not_shown": max(0, stored - len(data.history.attempts)),
        # The buttons the statements would accept; they still decide.
        "actions": states.operator_actions(data.todo, now, endpoint_revoked=revoked),
        # Autoescaped where rendered: payloads and results are untrusted input.
        "payload_json": pretty(data.todo.payload),
        "result_json": None if data.todo.result is None else pretty(data.todo.result),
        **extra,
    }


def text(request: BoardRequest, name: str) -> str | None:
    """A posted text field, stripped; None when empty."""
    return request.POST.get(name, "").strip() or None


def error_message(exc: LifecycleError) -> str:
    """What a page says when an action changed nothing."""
    if isinstance(exc, LeaseConflict):
        return (
            f"Could not {exc.transition.removeprefix('operator_')}: the todo has moved on since"
            " this page was drawn (another holder, or a state that does not allow it)."
            " It is shown as it is now."
        )
    return f"Nothing changed: {exc}."


# --- bulk actions ------------------------------------------------------------------------------

BULK_CONFIRM = "todos/bulk_confirm.html"
# What each bulk action says: the verb, what it acts on (one, and more), what it did.
BULK_WORDS = {
    "retry": ("Retry", ("dead letter", "dead letters"), "Retried"),
    "cancel": ("Cancel", ("unfinished todo", "unfinished todos"), "Canceled"),
    "forget": ("Forget", ("finished todo", "finished todos"), "Forgot"),
}
# The call behind a bulk action: (request, the confirmed filter, the count's time) -> result.
BulkAct = Callable[[BoardRequest, queries.TodoFilters, dt.datetime], BulkResult]


def list_filters(request: BoardRequest) -> queries.TodoFilters:
    """The list's filters from the query string: the list's, and the bulk actions' own."""
    return queries.TodoFilters.parse(request.GET)


def list_query(filters: queries.TodoFilters, **extra: str) -> str:
    return urlencode(filters.to_params() | {k: v for k, v in extra.items() if v})


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
    return whole_number(text, 9)


def bulk_page(request: BoardRequest, action: str, act: BulkAct) -> HttpResponse:
    """A bulk action on the list's current filter (its query string, on both requests); the
    caller's view checks the login and the action's name, and ``act`` is its lifecycle call.

    GET: the confirm page, with how many todos the action would change now (at most
    ``limits.BULK_MAX``, said when there are more). POST: the action, re-checking every todo
    against the count's time (``seen_at``), then back to the list with how many it changed.
    """
    if request.method not in ("GET", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])
    filters = list_filters(request)
    verb, (thing, things), done = BULK_WORDS[action]
    context: dict[str, Any] = {
        "section": "todos",
        "action": action,
        "verb": verb,
        "things": things,
        "filters": filters,
        "query": list_query(filters),
        "cap_text": f"{limits.BULK_MAX:,}",
    }
    if request.method == "POST":
        try:
            seen_at = _seen_at(request)
            result = act(request, filters, seen_at)
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
        # What the count counts, in its number: "1 dead letter", "2 dead letters".
        "counted_things": thing if count.n == 1 else things,
        "more": count.n > limits.BULK_MAX,
        "seen_at": count.seen_at.isoformat(),
    }
    return render(request, BULK_CONFIRM, context)
