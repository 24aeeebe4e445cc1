"""Owner-scoped reads of todos and their attempts: the list page, its counts, one todo's drawer,
the attempt history.

Every read here starts from ``Scope.of_human(...).todos()``: a todo outside the human's
endpoints is never returned, and a foreign id reads exactly like an unknown one.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import Any

from django.db.models import Count, Q, QuerySet

from attempts.models import TodoAttempt
from attempts.types import AttemptView
from switchboard.lib.errors import InvalidInput, TodoNotFound
from switchboard.lib.sql import fetch_all, load
from switchboard.models import Endpoint
from switchboard.scope import ENDPOINT_SCOPE_SQL, HUMAN_ENDPOINTS_SQL, HUMAN_SCOPE_SQL, Scope
from todos.models import Event, State, Todo
from todos.types import AttemptsPage

PAGE_SIZE = 50
ATTEMPTS_LIMIT_MAX = 200
_ATTEMPT_FIELDS = [f.name for f in fields(AttemptView)]


@dataclass(frozen=True, slots=True)
class TodoFilters:
    """The list's filters; empty strings mean "any"."""

    endpoint: str = ""
    queue: str = ""
    state: str = ""
    dead_letter: bool = False

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


_SQL = Path(__file__).parent / "sql"
# The endpoint's columns the page carries, in the model's field order (``from_db`` takes the
# values of the fields it is given in that order), and where each is found on a page row.
_ENDPOINT_COLUMNS = tuple(
    f.attname
    for f in Endpoint._meta.concrete_fields
    if f.attname in ("id", "slug", "name", "owner_id", "revoked_at")
)
_ENDPOINT_SOURCES = tuple("endpoint_id" if c == "id" else f"ep_{c}" for c in _ENDPOINT_COLUMNS)


@cache
def page_statement(endpoint: bool, queue: bool, state: bool, dead_letter: bool, after: bool) -> str:
    """The list statement for one combination of filters, built once per combination from fixed
    fragments (a generic ``(%(queue)s = '' OR …)`` would let a prepared plan ignore the state
    index)."""
    todo_filter = "".join(
        fragment
        for wanted, fragment in (
            (queue, " AND t.queue = %(queue)s"),
            (state, " AND t.state = %(state)s"),
            (dead_letter, " AND t.state = 'failed' AND t.next_retry_at IS NULL"),
            (after, " AND (t.created_at, t.id) < (%(after_created_at)s, %(after_id)s)"),
        )
        if wanted
    )
    return load(
        _SQL,
        "board_page",
        human_endpoints=HUMAN_ENDPOINTS_SQL,
        todo_filter=todo_filter,
        endpoint_filter=" AND e.slug = %(endpoint)s" if endpoint else "",
    )


def todo_page(
    human_id: int, filters: TodoFilters, after: Cursor | None = None, size: int = PAGE_SIZE
) -> TodoPage:
    """One page of the human's todos, newest first, after ``after`` (one query).

    Reads about ``size`` rows per endpoint of the human's (todos/sql/board_page.sql). The todos
    carry their endpoint (slug, name, owner, revoked_at) and defer their large columns
    (payload, result, work order, traces), which the list never shows.
    """
    sql = page_statement(
        bool(filters.endpoint),
        bool(filters.queue),
        bool(filters.state),
        filters.dead_letter,
        after is not None,
    )
    params: dict[str, Any] = {
        "scope_human_id": human_id,
        "size": size + 1,
        "endpoint": filters.endpoint,
        "queue": filters.queue,
        "state": filters.state,
    }
    if after is not None:
        params |= {"after_created_at": after.created_at, "after_id": after.id}
    rows = list(Todo.objects.raw(sql, params))
    for todo in rows:
        todo.endpoint = Endpoint.from_db(
            "default", _ENDPOINT_COLUMNS, [getattr(todo, name) for name in _ENDPOINT_SOURCES]
        )
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


# --- attempt history -------------------------------------------------------------------------


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


# --- the trail page --------------------------------------------------------------------------
# The owner-scoped reads that activity/trail.py puts together into one todo's story. Each
# answers for a todo outside ``scope`` exactly as for an unknown one.

TRAIL_ATTEMPTS_LIMIT = ATTEMPTS_LIMIT_MAX


def human_named_sql(ref: str) -> str:
    """The LATERAL subquery naming the human an actor reference (the column ``ref``) points
    at, for a statement to splice in at load time (todos/sql/_human_named.sql)."""
    return load(_SQL, "_human_named", ref=ref)


_TRAIL_ATTEMPTS = {
    scope_sql: load(_SQL, "trail_attempts", scope=scope_sql, human_named=human_named_sql("a.owner"))
    for scope_sql in (ENDPOINT_SCOPE_SQL, HUMAN_SCOPE_SQL)
}


@dataclass(frozen=True, slots=True)
class TrailAttempt:
    """An attempt as the trail shows it: the attempt, the notes refused over its cap, and the
    username behind an operator claim (None for an agent's claim or a deleted human)."""

    view: AttemptView
    notes_dropped: int
    claimer_name: str | None


def todo_in_scope(scope: Scope, todo_id: str) -> Todo:
    """One todo with its endpoint (one query); ``TodoNotFound`` outside ``scope``.

    Uses index: todos_pkey.
    """
    todo = Todo.objects.filter(scope.todos(), id=todo_id).select_related("endpoint").first()
    if todo is None:
        raise TodoNotFound(todo_id)
    return todo


def event_for_todo(scope: Scope, todo_id: str) -> Event | None:
    """The webhook delivery a todo was created from, whole (headers, payload, verification,
    routing trace) with its source, or None: for a todo made another way, and for a todo
    outside ``scope`` (one query, the owner predicate on the todo it is reached through).

    Uses index: todos_pkey, then events_pkey and sources_pkey.
    """
    return (
        Event.objects.filter(scope.todos("todos__"), todos__id=todo_id)
        .select_related("source")
        .first()
    )


def trail_attempts(
    scope: Scope, todo_id: str, limit: int = TRAIL_ATTEMPTS_LIMIT
) -> tuple[TrailAttempt, ...]:
    """A todo's newest ``limit`` attempts, newest first, with their dropped-note counts and
    the names behind operator claims (one query, todos/sql/trail_attempts.sql); none for a
    todo outside ``scope``. The todo's own ``attempts_total`` and ``attempts_pruned`` say how
    many there were and how many the per-todo cap pruned."""
    rows = fetch_all(_TRAIL_ATTEMPTS[scope.sql], {"id": todo_id, "limit": limit, **scope.params})
    return tuple(
        TrailAttempt(
            view=AttemptView.from_row(row),
            notes_dropped=row["notes_dropped"],
            claimer_name=row["claimer_name"],
        )
        for row in rows
    )
