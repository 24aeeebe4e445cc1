"""Owner-scoped reads of attempt history."""

from __future__ import annotations

from dataclasses import fields

from attempts.models import TodoAttempt
from switchboard.scope import Scope
from todos.errors import InvalidInput, TodoNotFound
from todos.models import Todo
from todos.types import AttemptsPage, AttemptView

ATTEMPTS_LIMIT_MAX = 200
_ATTEMPT_FIELDS = [f.name for f in fields(AttemptView)]


def attempts_for_todo(scope: Scope, todo_id: str, limit: int = 20) -> AttemptsPage:
    """Return a todo's attempts newest first (the open one included), its total and pruned count.

    Raises ``TodoNotFound`` for an id outside ``scope``, exactly as for an unknown one.
    """
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidInput("attempts_limit", "must be an integer")
    if not 1 <= limit <= ATTEMPTS_LIMIT_MAX:
        raise InvalidInput("attempts_limit", f"must be between 1 and {ATTEMPTS_LIMIT_MAX}")
    counts = (
        Todo.objects.filter(scope.todos(), id=todo_id)
        .values_list("attempts_total", "attempts_pruned")
        .first()
    )
    if counts is None:
        raise TodoNotFound(todo_id)
    # Uses index: todo_attempts_pkey (todo_id, seq), read backwards.
    rows = TodoAttempt.objects.filter(todo_id=todo_id).order_by("-seq").values(*_ATTEMPT_FIELDS)
    return AttemptsPage(
        attempts=tuple(AttemptView.from_row(row) for row in rows[:limit]),
        total=counts[0],
        pruned=counts[1],
    )


def recent_closed_attempts(todo_id: str, n: int) -> tuple[AttemptView, ...]:
    """The ``n`` most recently closed attempts of a todo, newest first (no scope check: callers
    have already matched the todo in scope)."""
    rows = (
        TodoAttempt.objects.filter(todo_id=todo_id, ended_at__isnull=False)
        .order_by("-seq")
        .values(*_ATTEMPT_FIELDS)[:n]
    )
    return tuple(AttemptView.from_row(row) for row in rows)
