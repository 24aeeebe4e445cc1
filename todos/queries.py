"""Owner-scoped reads of todos for the Board: the list page, its counts, one todo's drawer.

Every read here starts from ``Scope.of_human(...).todos()``: a todo outside the human's
endpoints is never returned, and a foreign id reads exactly like an unknown one.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet

from attempts.queries import ATTEMPTS_LIMIT_MAX, attempts_for_todo
from switchboard.scope import Scope
from todos.errors import TodoNotFound
from todos.models import State, Todo
from todos.types import AttemptsPage

PAGE_SIZE = 50


@dataclass(frozen=True, slots=True)
class TodoFilters:
    """The list's filters; empty strings mean "any"."""

    endpoint: str = ""
    queue: str = ""
    state: str = ""
    dead_letter: bool = False

    def q(self) -> Q:
        """The filters as a predicate, the state and dead-letter ones included."""
        q = self.q_scope_only()
        if self.state:
            q &= Q(state=self.state)
        if self.dead_letter:
            q &= Q(state=State.FAILED, next_retry_at__isnull=True)
        return q

    def q_scope_only(self) -> Q:
        """Endpoint and queue only: the per-state counts are taken across states."""
        q = Q()
        if self.endpoint:
            q &= Q(endpoint__slug=self.endpoint)
        if self.queue:
            q &= Q(queue=self.queue)
        return q


@dataclass(frozen=True, slots=True)
class Cursor:
    """A keyset position: the (created_at, id) of the last row shown, newest first."""

    created_at: dt.datetime
    id: str

    def encode(self) -> str:
        return f"{self.created_at.isoformat()}~{self.id}"

    @classmethod
    def decode(cls, text: str) -> Cursor | None:
        """The cursor ``text`` names, or None when it is malformed (the list then starts over)."""
        stamp, sep, todo_id = text.rpartition("~")
        if not sep or not todo_id:
            return None
        try:
            created_at = dt.datetime.fromisoformat(stamp)
        except ValueError:
            return None
        if created_at.tzinfo is None:
            return None
        return cls(created_at, todo_id)


@dataclass(frozen=True, slots=True)
class TodoPage:
    todos: list[Todo]
    next_cursor: Cursor | None


def _scoped(human_id: int) -> QuerySet[Todo]:
    return Todo.objects.filter(Scope.of_human(human_id).todos())


def todo_page(
    human_id: int, filters: TodoFilters, after: Cursor | None = None, size: int = PAGE_SIZE
) -> TodoPage:
    """One page of the human's todos, newest first, after ``after`` (one query).

    Uses index: todos_board_idx (endpoint_id, created_at DESC, id DESC), or
    todos_board_state_idx when filtered by state.
    """
    qs = _scoped(human_id).filter(filters.q()).select_related("endpoint")
    if after is not None:
        qs = qs.filter(
            Q(created_at__lt=after.created_at) | Q(created_at=after.created_at, id__lt=after.id)
        )
    rows = list(qs.order_by("-created_at", "-id")[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    cursor = Cursor(rows[-1].created_at, rows[-1].id) if more else None
    return TodoPage(rows, cursor)


def state_counts(human_id: int, filters: TodoFilters) -> dict[str, int]:
    """How many of the human's todos are in each state, plus ``dead_letter`` and ``all``.

    One aggregate query over the endpoint and queue filters (not the state filter: the counts
    are the state tabs). Uses index: todos_board_state_idx.
    """
    aggregates: dict[str, Any] = {
        state.value: Count("id", filter=Q(state=state.value)) for state in State
    }
    dead = Q(state=State.FAILED, next_retry_at__isnull=True)
    aggregates["dead_letter"] = Count("id", filter=dead)
    aggregates["all"] = Count("id")
    return _scoped(human_id).filter(filters.q_scope_only()).aggregate(**aggregates)


@dataclass(frozen=True, slots=True)
class Drawer:
    todo: Todo
    history: AttemptsPage


def drawer(human_id: int, todo_id: str) -> Drawer:
    """One todo with its endpoint and its attempt history, newest first (three queries).

    Raises ``TodoNotFound`` for an id outside the human's scope, exactly as for an unknown one.
    """
    todo = _scoped(human_id).select_related("endpoint").filter(id=todo_id).first()
    if todo is None:
        raise TodoNotFound(todo_id)
    # The newest 200 at most; the drawer says how many stored ones it leaves out.
    history = attempts_for_todo(Scope.of_human(human_id), todo_id, limit=ATTEMPTS_LIMIT_MAX)
    return Drawer(todo, history)
