"""What the Board's todo page modules share: the request's scope, the id check, the 404
answer, the drawer's context and the words of a refused action.

Below both page modules that show a todo (``todos/views.py``: the list, bulk actions and queue
pauses; ``activity/views.py``: the drawer, the trail page and the operator actions), so
neither imports the other.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone

from attempts.models import ClaimerKind
from switchboard import actors
from switchboard.lib import jsonlimits
from switchboard.lib.actors import Actor
from switchboard.lib.errors import LeaseConflict, LifecycleError
from switchboard.lib.guards import BoardRequest
from switchboard.scope import Scope
from todos import queries, states
from todos.present import attempt_row, pretty

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
