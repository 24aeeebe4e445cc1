"""Every owner-scoped read of todos and their attempts, once: the list, the per-state counts,
one todo with its attempts, the attempt history, a queue's summary and the queues worth listing.
The list's filters and cursor are ``todos/filters.py``'s; the attempt rows are read by
``attempts/queries.py`` once the todo is matched in scope here.

Every read takes a ``Scope`` (switchboard/scope.py): the Board passes ``Scope.of_human``, MCP
``Scope.of_endpoint``, and both get the same functions. A todo outside the scope is never
returned, and a foreign id reads exactly like an unknown one. The surfaces (todos/views.py,
mcp_server/tools.py, mcp_server/resources.py) only shape what these return.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from django.db.models import Count, Min, Q
from django.db.models.expressions import RawSQL

from attempts.queries import (
    ATTEMPTS_LIMIT_MAX,
    attempt_history,
    check_attempts_limit,
)
from attempts.types import AttemptView
from switchboard import actors
from switchboard.lib.actors import Actor
from switchboard.lib.errors import InvalidInput, TodoNotFound
from switchboard.lib.sql import fetch_all, load
from switchboard.models import Endpoint
from switchboard.scope import ENDPOINT_SCOPE_SQL, HUMAN_SCOPE_SQL, Scope

# DEFAULT_SORT, Cursor and TodoFilters are read here too by the surfaces that list todos.
from todos.filters import DEFAULT_SORT as DEFAULT_SORT
from todos.filters import Cursor, TodoFilters, keyset_order
from todos.limits import BULK_ACTIONS
from todos.models import Event, QueuePause, QueueSettings, Rule, Todo, TodoQuerySet
from todos.states import State, claimable_q, dead_letter_q
from todos.types import AttemptsPage, PauseWhy

PAGE_SIZE = 50
LISTED_QUEUES_MAX = 100


@dataclass(frozen=True, slots=True)
class TodoPage:
    todos: list[Todo]
    next_cursor: Cursor | None


def _scoped(scope: Scope) -> TodoQuerySet:
    return Todo.objects.filter(scope.todos())


# --- the list ----------------------------------------------------------------------------------

_SQL = Path(__file__).parent / "sql"
# The endpoint's columns the page carries, in the model's field order (``from_db`` takes the
# values of the fields it is given in that order), and where each is found on a page row.
_ENDPOINT_COLUMNS = tuple(
    f.attname
    for f in Endpoint._meta.concrete_fields
    if f.attname in ("id", "slug", "name", "owner_id", "team_id", "revoked_at")
)
_ENDPOINT_SOURCES = tuple("endpoint_id" if c == "id" else f"ep_{c}" for c in _ENDPOINT_COLUMNS)


@cache
def page_statement(
    scope_endpoints: str, endpoint: bool, todo_filter: str, sort: str, after: bool, search: bool
) -> str:
    """The list statement for one scope side (``Scope.endpoints_sql``), one combination of
    filters (``TodoFilters.where_sql``, fixed text per combination: a generic ``(%(queue)s = ''
    OR …)`` would let a prepared plan ignore the state index) and one sort, built once per
    combination. A search reads todo_search_text_idx once for the whole scope
    (todos/sql/todo_search.sql); a list reads each endpoint's todos in order
    (todos/sql/todo_page.sql)."""
    order, sort_key, keyset = keyset_order(sort)
    return load(
        _SQL,
        "todo_search" if search else "todo_page",
        scope_endpoints=scope_endpoints,
        todo_filter=todo_filter + (f" AND {keyset}" if after else ""),
        endpoint_filter=" AND e.slug = %(endpoint)s" if endpoint else "",
        order=order,
        sort_key=sort_key,
    )


def todo_page(
    scope: Scope, filters: TodoFilters, after: Cursor | None = None, size: int = PAGE_SIZE
) -> TodoPage:
    """One page of the todos in ``scope`` that ``filters`` match, in its sort (newest first by
    default), after ``after`` (one query). A cursor made for another sort starts from the top.

    Newest or oldest first (todos/sql/todo_page.sql): per endpoint in scope it reads about
    ``size`` rows of todos_board_idx, so a human's page costs about a page per endpoint and an
    endpoint's page is one bounded index scan (tests/board/test_list_plan.py holds both to
    that). Another sort reads every todo the filters leave of each endpoint and keeps the top
    ``size`` (no index is ordered by title or state within an endpoint). A search reads
    todo_search_text_idx, or todos_pkey for a todo id (todos/sql/todo_search.sql). The todos carry
    their endpoint (slug, name, owner, revoked_at) and defer their large columns (payload,
    result, work order, traces, input request), which no list shows.
    """
    if filters.matches_nothing:
        return TodoPage([], None)
    sort = filters.order
    if after is not None and after.sort != sort:
        after = None
    sql = page_statement(
        scope.endpoints_sql,
        bool(filters.endpoint),
        filters.where_sql(endpoint=False),
        sort,
        after is not None,
        bool(filters.q),
    )
    params: dict[str, Any] = {**scope.params, **filters.sql_params(), "size": size + 1}
    if after is not None:
        params |= {"after_key": after.key, "after_created_at": after.created_at}
        params["after_id"] = after.id
    rows = list(Todo.objects.raw(sql, params))
    for todo in rows:
        todo.endpoint = Endpoint.from_db(
            "default", _ENDPOINT_COLUMNS, [getattr(todo, name) for name in _ENDPOINT_SOURCES]
        )
    more = len(rows) > size
    rows = rows[:size]
    return TodoPage(rows, Cursor.after(rows[-1], sort) if more else None)


def state_counts(scope: Scope, filters: TodoFilters) -> dict[str, int]:
    """How many todos of ``scope`` are in each state, plus ``dead_letter`` and ``all``.

    One aggregate query over every filter but the state tabs' own (state, dead letter: the counts
    are the state tabs). Uses index: todos_board_state_idx; todo_search_text_idx with a search.
    """
    aggregates: dict[str, Any] = {
        state.value: Count("id", filter=Q(state=state.value)) for state in State
    }
    aggregates["dead_letter"] = Count("id", filter=dead_letter_q())
    aggregates["all"] = Count("id")
    if filters.matches_nothing:
        return _scoped(scope).none().aggregate(**aggregates)
    return _scoped(scope).filter(filters.without_state().q_filter()).aggregate(**aggregates)


# --- one todo ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TodoDetail:
    """One todo (its endpoint loaded) and its attempt history, newest first."""

    todo: Todo
    history: AttemptsPage


def todo_detail(scope: Scope, todo_id: str, attempts_limit: int = ATTEMPTS_LIMIT_MAX) -> TodoDetail:
    """One todo with its endpoint and its newest ``attempts_limit`` attempts (two queries).

    The Board's drawer and todo page, MCP's get_todo and the ``switchboard://todos/{id}``
    resource read this. Raises ``TodoNotFound`` for an id outside ``scope``, exactly as for an
    unknown one, and ``InvalidInput`` for a limit outside 1 to ``ATTEMPTS_LIMIT_MAX``.
    """
    check_attempts_limit(attempts_limit)
    todo = _scoped(scope).select_related("endpoint").filter(id=todo_id).first()
    if todo is None:
        raise TodoNotFound(todo_id)
    # The counts come with the todo's row; only the attempts are a second read.
    history = AttemptsPage(
        attempts=attempt_history(
            todo_id, attempts_limit, todo.attempts_total, todo.lease_expires_at
        ),
        total=todo.attempts_total,
        pruned=todo.attempts_pruned,
    )
    return TodoDetail(todo, history)


def attempts_for_todo(scope: Scope, todo_id: str, limit: int = 20) -> AttemptsPage:
    """Return a todo's attempts newest first (the open one included), its total and pruned count.

    Raises ``TodoNotFound`` for an id outside ``scope``, exactly as for an unknown one.
    """
    check_attempts_limit(limit)
    counts = (
        _scoped(scope)
        .filter(id=todo_id)
        .values_list("attempts_total", "attempts_pruned", "lease_expires_at")
        .first()
    )
    if counts is None:
        raise TodoNotFound(todo_id)
    total, pruned, lease = counts
    return AttemptsPage(
        attempts=attempt_history(todo_id, limit, total, lease), total=total, pruned=pruned
    )


# --- queues ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueSummary:
    """A queue of a scope: how many of its todos a claim would take now, the oldest pending
    one's creation, and how many are in each state (every state, zeros included)."""

    queue: str
    claimable: int
    oldest_pending_at: dt.datetime | None
    counts: dict[str, int]


def queue_summary(scope: Scope, queue: str) -> QueueSummary:
    """Summarise ``queue`` within ``scope`` in one aggregate over its todos.

    ``claimable`` is ``Todo.objects.claimable()``'s predicate (todos/sql/_claimable.sql).
    Uses index: todos_board_state_idx (endpoint_id, state, …); queue filters the rows read.
    """
    aliases = {state: f"n_{state.value.replace('-', '_')}" for state in State}
    row = (
        _scoped(scope)
        .filter(queue=queue)
        .aggregate(
            claimable=Count("id", filter=claimable_q()),
            oldest_pending_at=Min("created_at", filter=Q(state=State.PENDING)),
            **{alias: Count("id", filter=Q(state=state)) for state, alias in aliases.items()},
        )
    )
    return QueueSummary(
        queue=queue,
        claimable=row["claimable"],
        oldest_pending_at=row["oldest_pending_at"],
        counts={state.value: row[alias] for state, alias in aliases.items()},
    )


def listed_queues(scope: Scope, limit: int = LISTED_QUEUES_MAX) -> list[str]:
    """The queues worth listing, sorted, at most ``limit``: those rules route into ``scope``
    and those with unfinished todos (``Todo.objects.unfinished()``).

    A queue exists only as a name on todos and rules, so there is no table to list; this is
    bounded, and any other queue name is still readable by name.
    """
    # Rules carry an endpoint as todos do, so the scope's predicate on todos fits them too.
    routed = Rule.objects.filter(scope.todos()).values_list("queue", flat=True)
    live = (
        _scoped(scope)
        .unfinished()
        .order_by()  # the model's default ordering would join the DISTINCT and defeat it
        .values_list("queue", flat=True)
        .distinct()[:limit]
    )
    return sorted({*routed, *live})[:limit]


PAUSED_LISTED_MAX = 100

# What a budget's pause is about, read with the pause (columns of the base table,
# ``queue_pauses``): what the pause's UTC day spent (the queue's hours, or the endpoint's for an
# endpoint's budget; usage_hours_pkey), and the budget as set now.
_PAUSE_SPENT = RawSQL(
    "CASE WHEN queue_pauses.reason IN ('queue_budget', 'endpoint_budget')"
    " AND queue_pauses.until IS NOT NULL THEN (SELECT COALESCE(sum(u.cost_usd), 0)"
    " FROM usage_hours u WHERE u.endpoint_id = queue_pauses.endpoint_id"
    " AND (queue_pauses.reason = 'endpoint_budget' OR u.queue = queue_pauses.queue)"
    " AND u.hour >= queue_pauses.until - interval '1 day' AND u.hour < queue_pauses.until) END",
    (),
)
_PAUSE_BUDGET = RawSQL(
    "CASE queue_pauses.reason"
    " WHEN 'queue_budget' THEN (SELECT s.daily_budget_usd FROM queue_settings s"
    " WHERE s.endpoint_id = queue_pauses.endpoint_id AND s.queue = queue_pauses.queue)"
    " WHEN 'endpoint_budget' THEN (SELECT e.daily_budget_usd FROM endpoints e"
    " WHERE e.id = queue_pauses.endpoint_id) END",
    (),
)


@dataclass(frozen=True, slots=True)
class PausedQueue:
    """An open pause as the Board lists it: the endpoint, the queue, and why."""

    endpoint: Endpoint
    queue: str
    why: PauseWhy


def paused_queues(
    scope: Scope,
    queues: list[str] | None = None,
    limit: int = PAUSED_LISTED_MAX,
    known: Mapping[Actor, str] | None = None,
) -> list[PausedQueue]:
    """The open pauses of ``scope``'s queues (of ``queues`` only, when given), with their
    endpoints and why each is paused, by endpoint slug and queue, at most ``limit``: one query,
    and one more for the names of those who paused them (``actors.resolve``; none when
    ``known``, the viewer's, holds them).

    Uses index: queue_pauses_open_idx (endpoint_id, queue) WHERE resumed_at IS NULL; per pause,
    queue_settings_queue_key and usage_hours_pkey for a budget's.
    """
    pauses = QueuePause.objects.filter(
        Q(resumed_at__isnull=True), endpoint__in=Endpoint.objects.filter(scope.endpoints())
    )
    if queues is not None:
        pauses = pauses.filter(queue__in=queues)
    rows = (
        pauses.select_related("endpoint")
        .annotate(spent_usd=_PAUSE_SPENT, budget_usd=_PAUSE_BUDGET)
        .order_by("endpoint__slug", "queue")[:limit]
    )
    names = actors.resolve([p.paused_by for p in rows], known)
    return [
        PausedQueue(
            endpoint=p.endpoint,
            queue=p.queue,
            why=PauseWhy(
                paused_by=p.paused_by,
                paused_by_name=names.name(p.paused_by),
                reason=p.reason,
                until=p.until,
                spent_usd=p.spent_usd,
                budget_usd=p.budget_usd,
            ),
        )
        for p in rows
    ]


def queue_limits(scope: Scope, queues: list[str] | None = None) -> list[QueueSettings]:
    """The limits set on ``scope``'s queues (of ``queues`` only, when given), with their
    endpoints, by endpoint slug and queue (one query).

    Uses index: queue_settings_queue_key (endpoint_id, queue).
    """
    rows = QueueSettings.objects.filter(endpoint__in=Endpoint.objects.filter(scope.endpoints()))
    if queues is not None:
        rows = rows.filter(queue__in=queues)
    return list(rows.select_related("endpoint").order_by("endpoint__slug", "queue"))


def all_queue_limits() -> list[QueueSettings]:
    """Every endpoint's queue limits, for the system's own view (``manage.py queue show``
    without ``--as``): whoever runs manage.py on the server already has the database."""
    return list(
        QueueSettings.objects.select_related("endpoint").order_by("endpoint__slug", "queue")
    )


# --- the trail page --------------------------------------------------------------------------
# The owner-scoped reads that activity/trail.py puts together into one todo's story. Each
# answers for a todo outside ``scope`` exactly as for an unknown one.

TRAIL_ATTEMPTS_LIMIT = ATTEMPTS_LIMIT_MAX


_TRAIL_ATTEMPTS = {
    scope_sql: load(_SQL, "trail_attempts", scope=scope_sql)
    for scope_sql in (ENDPOINT_SCOPE_SQL, HUMAN_SCOPE_SQL)
}


@dataclass(frozen=True, slots=True)
class TrailAttempt:
    """An attempt as the trail shows it: the attempt and the notes refused over its cap."""

    view: AttemptView
    notes_dropped: int


def todo_in_scope(scope: Scope, todo_id: str) -> Todo:
    """One todo with its endpoint (one query); ``TodoNotFound`` outside ``scope``.

    Uses index: todos_pkey.
    """
    todo = Todo.objects.filter(scope.todos(), id=todo_id).select_related("endpoint").first()
    if todo is None:
        raise TodoNotFound(todo_id)
    return todo


def listed_todos(
    scope: Scope, todo_ids: Iterable[str], filters: TodoFilters | None = None
) -> list[Todo]:
    """The todos of ``todo_ids`` in ``scope`` (and, given ``filters``, that the list's filters
    match), each with its endpoint, in one query whatever their number: the live list's re-read
    of its rows (activity/live.py). Ids outside the scope are left out, as unknown ones.

    Uses index: todos_pkey.
    """
    ids = list(todo_ids)
    if not ids or (filters is not None and filters.matches_nothing):
        return []
    rows = Todo.objects.filter(scope.todos(), id__in=ids)
    if filters is not None:
        rows = rows.filter(filters.q_filter())
    return list(rows.select_related("endpoint").order_by("-created_at", "-id"))


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
    """A todo's newest ``limit`` attempts, newest first, with their dropped-note counts (one
    query, todos/sql/trail_attempts.sql); none for a todo outside ``scope``. The todo's own
    ``attempts_total`` and ``attempts_pruned`` say how many there were and how many the
    per-todo cap pruned."""
    rows = fetch_all(_TRAIL_ATTEMPTS[scope.sql], {"id": todo_id, "limit": limit, **scope.params})
    return tuple(
        TrailAttempt(
            view=AttemptView.from_row(row),
            notes_dropped=row["notes_dropped"],
        )
        for row in rows
    )


# --- bulk actions ------------------------------------------------------------------------------


@cache
def bulk_count_statement(action: str, scope_sql: str, selection: str) -> str:
    """The count of one bulk action's todos, for one scope side and one filter combination
    (todos/sql/bulk_count.sql with the action's target fragment)."""
    target = f"@{{bulk_{action}_target}}"
    return load(_SQL, "bulk_count", scope=scope_sql, selection=selection, target=target)


@dataclass(frozen=True, slots=True)
class BulkCount:
    """How many todos a bulk action would act on (at most the ``limit`` asked for), and the
    database's time of the count, which the action is given back (``seen_at``)."""

    n: int
    seen_at: dt.datetime


def bulk_count(scope: Scope, filters: TodoFilters, action: str, limit: int) -> BulkCount:
    """Count, up to ``limit``, the todos in ``scope`` that ``filters`` select and ``action``
    (``retry``: dead letters; ``cancel``: unfinished todos) would act on (one query)."""
    if action not in BULK_ACTIONS:
        raise InvalidInput("action", f"must be one of {', '.join(BULK_ACTIONS)}")
    if filters.matches_nothing:  # PostgreSQL could not compare the value: nothing matches
        return BulkCount(0, dt.datetime.now(dt.UTC))
    selection, params = filters.where()
    sql = bulk_count_statement(action, scope.sql, selection)
    row = fetch_all(sql, {**params, **scope.params, "limit": limit})[0]
    return BulkCount(int(row["n"]), row["seen_at"])
