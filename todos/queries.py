"""Every owner-scoped read of todos and their attempts, once: the list and its cursor, the
per-state counts, one todo with its attempts, the attempt history, a queue's summary and the
queues worth listing.

Every read takes a ``Scope`` (switchboard/scope.py): the Board passes ``Scope.of_human``, MCP
``Scope.of_endpoint``, and both get the same functions. A todo outside the scope is never
returned, and a foreign id reads exactly like an unknown one. The surfaces (todos/views.py,
mcp_server/tools.py, mcp_server/resources.py) only shape what these return.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from django.db.models import BooleanField, Count, Min, Q
from django.db.models.expressions import RawSQL

from attempts.models import TodoAttempt
from attempts.types import AttemptView
from switchboard.lib import jsonlimits
from switchboard.lib.errors import InvalidInput, TodoNotFound
from switchboard.lib.sql import fetch_all, load
from switchboard.models import Endpoint
from switchboard.scope import ENDPOINT_SCOPE_SQL, HUMAN_SCOPE_SQL, Scope
from todos.models import Event, QueuePause, Rule, Todo
from todos.states import State, TodoQuerySet, claimable_q, dead_letter_q
from todos.types import AttemptsPage

PAGE_SIZE = 50
ATTEMPTS_LIMIT_MAX = 200
LISTED_QUEUES_MAX = 100
_ATTEMPT_FIELDS = [f.name for f in fields(AttemptView)]


# --- the list's filters ------------------------------------------------------------------------

# The sorts the list offers: a column name, newest (or Z) first with a leading "-". Each orders
# by its key, then by created_at and id, in the one direction, so the keyset (key, created_at,
# id) is total and a cursor continues exactly where its page ended. A sort by finished puts the
# unfinished todos last either way (their key is a sentinel beyond every real time).
DEFAULT_SORT = "-created"
SORT_KEYS: dict[str, tuple[str, str] | None] = {
    "created": None,  # the keyset is (created_at, id) alone: todos_board_idx, either way round
    "updated": ("t.updated_at", "t.updated_at"),
    "finished": (
        "coalesce(t.finished_at, '0001-01-01 00:00:00+00'::timestamptz)",
        "coalesce(t.finished_at, '9999-12-31 23:59:59.999999+00'::timestamptz)",
    ),
    "title": ("t.title", "t.title"),
    "state": ("t.state", "t.state"),
    "queue": ("t.queue", "t.queue"),
}
TIME_SORTS = frozenset({"updated", "finished"})
SORTS = tuple(f"{sign}{name}" for name in SORT_KEYS for sign in ("-", ""))
# Search: a todo id alone finds that todo through todos_pkey; anything else is a
# case-insensitive substring of todo_search_text (todos/migrations/0013_todo_search.py), kept in
# todo_search (0014) and read through todo_search_text_idx, which needs three letters or digits
# in a row to narrow anything.
Q_MAX_CHARS = 200
TODO_ID = re.compile(r"td_[a-z2-7]{20}")
_TRIGRAM = re.compile(r"[^\W_]{3}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TEXT_MAX = 40  # longer date text is cut before it is echoed in a message
SORT_KEY_MAX_CHARS = 4096  # a cursor's key: titles are at most 1,024 bytes


def _like_pattern(text: str) -> str:
    """``%text%`` for ILIKE, with LIKE's own characters (and its escape) taken literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _day(text: str, label: str) -> tuple[dt.date | None, str | None]:
    """A YYYY-MM-DD date (a UTC day), or the message saying why ``text`` is not one."""
    if not text:
        return None, None
    if _DATE.fullmatch(text):
        try:
            return dt.date.fromisoformat(text), None
        except ValueError:
            pass
    return None, f"{label}: {text[:_DATE_TEXT_MAX]!r} is not a date (YYYY-MM-DD)."


def _day_start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), dt.UTC)


@dataclass(frozen=True, slots=True)
class TodoFilters:
    """The list's filters, the one definition of "the todos the list shows": the Board's list,
    its counts, MCP's list_todos and A2A's ListTasks build one, and statements that act on "the
    current filter" take its ``where_sql`` and ``sql_params``. Empty strings mean "any".

    ``parse`` reads them from request parameters. Values are kept as given, so the form can show
    them again; ``errors`` says what is wrong with them. A filter that cannot be read (a date
    that is not one, a search too short or too long, text PostgreSQL cannot hold) matches
    nothing, so nothing acts on a misread filter; an unknown sort only falls back to newest
    first.
    """

    endpoint: str = ""
    queue: str = ""
    state: str = ""
    dead_letter: bool = False
    queue_prefix: str = ""  # queues starting with this (``queue=ci-*`` on the Board)
    q: str = ""  # search: a todo id, or text in its id, title or payload
    created_from: str = ""  # YYYY-MM-DD, the first UTC day included
    created_to: str = ""  # YYYY-MM-DD, the last UTC day included
    sort: str = DEFAULT_SORT

    # The fields that order the list and select nothing: ``where`` says every other one.
    ORDER_ONLY: ClassVar[tuple[str, ...]] = ("sort",)

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> TodoFilters:
        """Filters from request parameters (the Board's query string). A queue ending in ``*``
        is a prefix; an unknown state means "any", as before."""
        queue = params.get("queue", "").strip()
        prefix = ""
        if queue.endswith("*"):
            queue, prefix = "", queue.rstrip("*")
        state = params.get("state", "")
        return cls(
            endpoint=params.get("endpoint", "").strip(),
            queue=queue,
            state=state if state in State.values else "",
            dead_letter=params.get("dead") == "1",
            queue_prefix=prefix,
            q=params.get("q", "").strip(),
            created_from=params.get("created_from", "").strip(),
            created_to=params.get("created_to", "").strip(),
            sort=params.get("sort", "").strip() or DEFAULT_SORT,
        )

    def to_params(self) -> dict[str, str]:
        """The request parameters ``parse`` reads back into these filters (empty ones left out)."""
        params = {
            "endpoint": self.endpoint,
            "queue": f"{self.queue_prefix}*" if self.queue_prefix else self.queue,
            "state": self.state,
            "dead": "1" if self.dead_letter else "",
            "q": self.q,
            "created_from": self.created_from,
            "created_to": self.created_to,
            "sort": "" if self.order == DEFAULT_SORT else self.order,  # an unknown one dropped
        }
        return {k: v for k, v in params.items() if v}

    # --- what is wrong ------------------------------------------------------------------

    def _filter_errors(self) -> list[str]:
        errors = []
        for label, value in (
            ("Endpoint", self.endpoint),
            ("Queue", self.queue or self.queue_prefix),
            ("State", self.state),
            ("Search", self.q),
            ("Created from", self.created_from),
            ("Created to", self.created_to),
        ):
            if (reason := jsonlimits.text_problem(value)) is not None:
                errors.append(f"{label} {reason}: nothing can match it.")
        if errors:
            return errors  # the checks below would only repeat them
        if len(self.q) > Q_MAX_CHARS:
            errors.append(f"Search is at most {Q_MAX_CHARS} characters ({len(self.q)} given).")
        elif self.q and not self.is_id_search and _TRIGRAM.search(self.q) is None:
            errors.append("Search for three letters or digits in a row, or a whole todo id.")
        start, start_error = _day(self.created_from, "Created from")
        end, end_error = _day(self.created_to, "Created to")
        errors += [e for e in (start_error, end_error) if e]
        if start and end and start > end:
            errors.append("Created from is after created to: no day is in that range.")
        return errors

    @property
    def errors(self) -> tuple[str, ...]:
        """What the page tells the human about these filters, empty when all is well."""
        errors = self._filter_errors()
        if self.sort not in SORTS:
            names = ", ".join(SORT_KEYS)
            errors.append(f"Unknown sort: sort by {names} (newest first shown).")
        return tuple(errors)

    @property
    def matches_nothing(self) -> bool:
        """A filter that cannot be read: a value PostgreSQL text cannot hold (NUL, a lone
        surrogate), a date that is not one, a search that is too short or too long."""
        return bool(self._filter_errors())

    @property
    def order(self) -> str:
        """The sort in force: ``sort`` when it is one of ``SORTS``, else newest first."""
        return self.sort if self.sort in SORTS else DEFAULT_SORT

    @property
    def is_id_search(self) -> bool:
        return TODO_ID.fullmatch(self.q) is not None

    def without_state(self) -> TodoFilters:
        """These filters but the state tabs' (state, dead letter): what the counts count."""
        return replace(self, state="", dead_letter=False)

    # --- as SQL -------------------------------------------------------------------------

    def where_sql(self, alias: str = "t", *, endpoint: bool = True) -> str:
        """The filters as a predicate on ``todos`` aliased ``alias``, with ``%(name)s``
        parameters (``sql_params``): `` AND …`` for each filter set, empty for none. The text
        depends only on which filters are set, so a statement built from it can be cached per
        combination. ``endpoint=False`` leaves the endpoint filter to the caller (the list puts
        it on the endpoints it loops over). Precondition: not ``matches_nothing``."""
        t = alias
        parts = []
        if endpoint and self.endpoint:
            parts.append(
                f"{t}.endpoint_id IN (SELECT x.id FROM endpoints x WHERE x.slug = %(endpoint)s)"
            )
        if self.queue:
            parts.append(f"{t}.queue = %(queue)s")
        if self.queue_prefix:
            parts.append(f"starts_with({t}.queue, %(queue_prefix)s)")
        if self.state:
            parts.append(f"{t}.state = %(state)s")
        if self.dead_letter:
            parts.append(re.sub(r"\bt\.", f"{t}.", _DEAD_LETTER_SQL))
        if self.created_from:
            parts.append(f"{t}.created_at >= %(created_from)s")
        if self.created_to:
            parts.append(f"{t}.created_at < %(created_before)s")
        if self.is_id_search:
            parts.append(f"{t}.id = %(q)s")  # Uses index: todos_pkey
        elif self.q:
            # Uses index: todo_search_text_idx, then todos_pkey for the matches (the text is a
            # table of its own, written once at creation: todos/migrations/0014).
            parts.append(
                f"{t}.id IN (SELECT s.todo_id FROM todo_search s WHERE s.text ILIKE %(q_pattern)s)"
            )
        return "".join(f" AND {part}" for part in parts)

    def _created_before(self) -> dt.datetime | str | None:
        end, _ = _day(self.created_to, "")
        if end is None:
            return None  # matches_nothing: the statement is never run
        if end == dt.date.max:
            return "infinity"  # the day after 9999-12-31 is no Python date
        return _day_start(end + dt.timedelta(days=1))

    def sql_params(self) -> dict[str, Any]:
        """The parameters ``where_sql`` names (and a few it may not: harmless)."""
        start, _ = _day(self.created_from, "")
        return {
            "endpoint": self.endpoint,
            "queue": self.queue,
            "queue_prefix": self.queue_prefix,
            "state": self.state,
            "created_from": _day_start(start) if start else None,
            "created_before": self._created_before(),
            "q": self.q,
            "q_pattern": _like_pattern(self.q),
        }

    def q_filter(self) -> Q:
        """``where_sql`` as a ``Q`` on the ``todos`` table, for ORM reads (the counts)."""
        named = self.where_sql("todos")
        if not named:
            return Q()
        params = self.sql_params()
        values = [params[name] for name in _NAMED.findall(named)]
        sql = _NAMED.sub("%s", named).removeprefix(" AND ")
        # Fixed fragments only; every value is a parameter.
        return Q(RawSQL(sql, values, BooleanField()))  # noqa: S611

    def where(self) -> tuple[str, dict[str, Any]]:
        """The filters as one SQL predicate on todos ``t`` and the parameters it names: what a
        bulk action selects (todos/sql/bulk_*.sql, ``bulk_count``). ``TRUE`` when nothing is
        set. ``where_sql`` without its leading `` AND ``, so the list and the bulk actions
        select the same todos.

        The text depends only on which filters are set, never on their values (always
        parameters), so each combination makes one statement, built and prepared once. Every
        field of the filters but ``ORDER_ONLY`` must be said here (tests/todos/test_bulk.py sets
        each in turn): a filter the list applies and a bulk action ignored would act on todos
        nobody saw. Precondition: not ``matches_nothing``.
        """
        named = self.where_sql()
        params = self.sql_params()
        return named.removeprefix(" AND ") or "TRUE", {n: params[n] for n in _NAMED.findall(named)}

    def q_scope_only(self) -> Q:
        """Endpoint and queue only (kept for callers that count across the other filters)."""
        return TodoFilters(endpoint=self.endpoint, queue=self.queue).q_filter()


_NAMED = re.compile(r"%\((\w+)\)s")
_DEAD_LETTER_SQL = load(Path(__file__).parent / "sql", "_dead_letter")


@dataclass(frozen=True, slots=True)
class Cursor:
    """A keyset position: the (created_at, id) of the last row shown, and for a sort other than
    newest first, the sort and the row's sort key (``SORT_KEYS``).

    Its text is opaque to clients (base64url of ``["<created_at>", "<id>"]``, the time in UTC
    with its microseconds, which the keyset needs; a sorted list's adds the sort and the key);
    the Board carries it in its URLs and MCP returns it as ``next_cursor``.
    """

    created_at: dt.datetime
    id: str
    sort: str = DEFAULT_SORT
    key: dt.datetime | str | None = None

    @classmethod
    def after(cls, todo: Todo, sort: str = DEFAULT_SORT) -> Cursor:
        key = getattr(todo, "sort_key", None) if SORT_KEYS[sort.lstrip("-")] else None
        return cls(todo.created_at, todo.id, sort, key)

    def encode(self) -> str:
        value: list[Any] = [_stamp(self.created_at), self.id]
        if self.sort != DEFAULT_SORT:
            key = _stamp(self.key) if isinstance(self.key, dt.datetime) else self.key
            value += [self.sort, key]
        raw = json.dumps(value, separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).rstrip(b"=").decode()

    @classmethod
    def decode(cls, text: str) -> Cursor | None:
        """The cursor ``text`` names, or None when it is not one ``encode`` made."""
        try:
            value = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        except (binascii.Error, ValueError):  # UnicodeDecodeError and JSONDecodeError included
            return None
        if not (isinstance(value, list) and len(value) in (2, 4)):
            return None
        stamp, todo_id = value[:2]
        sort, key = value[2:] if len(value) == 4 else (DEFAULT_SORT, None)
        if not (isinstance(stamp, str) and isinstance(todo_id, str) and todo_id):
            return None
        if len(todo_id) > 64 or jsonlimits.text_problem(todo_id) is not None:
            return None  # names no todo, and PostgreSQL could not compare it
        created_at = _parse_stamp(stamp)
        if created_at is None or sort not in SORTS:
            return None
        name = sort.lstrip("-")
        if SORT_KEYS[name] is None:
            return cls(created_at, todo_id, sort) if key is None else None
        if not isinstance(key, str) or len(key) > SORT_KEY_MAX_CHARS:
            return None
        if name in TIME_SORTS:
            moment = _parse_stamp(key)
            return None if moment is None else cls(created_at, todo_id, sort, moment)
        if jsonlimits.text_problem(key) is not None:
            return None
        return cls(created_at, todo_id, sort, key)


def _stamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def _parse_stamp(text: str) -> dt.datetime | None:
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


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
    if f.attname in ("id", "slug", "name", "owner_id", "revoked_at")
)
_ENDPOINT_SOURCES = tuple("endpoint_id" if c == "id" else f"ep_{c}" for c in _ENDPOINT_COLUMNS)


def _order(sort: str) -> tuple[str, str, str]:
    """The ORDER BY list, the sort key's column (``NULL`` when the keyset is created_at and id
    alone) and the keyset predicate after a cursor, for ``sort`` (one of ``SORTS``)."""
    descending = sort.startswith("-")
    keys = SORT_KEYS[sort.lstrip("-")]
    key = (keys[0] if descending else keys[1]) if keys else None
    columns = ([key] if key else []) + ["t.created_at", "t.id"]
    bound = (["%(after_key)s"] if key else []) + ["%(after_created_at)s", "%(after_id)s"]
    direction = " DESC" if descending else ""
    keyset = f"({', '.join(columns)}) {'<' if descending else '>'} ({', '.join(bound)})"
    return ", ".join(f"{c}{direction}" for c in columns), key or "NULL", keyset


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
    order, sort_key, keyset = _order(sort)
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
    _check_attempts_limit(attempts_limit)
    todo = _scoped(scope).select_related("endpoint").filter(id=todo_id).first()
    if todo is None:
        raise TodoNotFound(todo_id)
    # The counts come with the todo's row; only the attempts are a second read.
    history = AttemptsPage(
        attempts=_attempts(todo_id, attempts_limit, todo.attempts_total, todo.lease_expires_at),
        total=todo.attempts_total,
        pruned=todo.attempts_pruned,
    )
    return TodoDetail(todo, history)


# --- attempt history ---------------------------------------------------------------------------


def _check_attempts_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidInput("attempts_limit", "must be an integer")
    if not 1 <= limit <= ATTEMPTS_LIMIT_MAX:
        raise InvalidInput("attempts_limit", f"must be between 1 and {ATTEMPTS_LIMIT_MAX}")


def _attempts(
    todo_id: str, limit: int, attempts_total: int, lease_expires_at: dt.datetime | None
) -> tuple[AttemptView, ...]:
    """The newest ``limit`` attempts, the open one showing the todo's live lease
    (``AttemptView.with_lease``: its own copy lags it by up to the sampled write's minute)."""
    # Uses index: todo_attempts_pkey (todo_id, seq), read backwards.
    rows = TodoAttempt.objects.filter(todo_id=todo_id).order_by("-seq").values(*_ATTEMPT_FIELDS)
    return tuple(
        AttemptView.from_row(row).with_lease(attempts_total, lease_expires_at)
        for row in rows[:limit]
    )


def attempts_for_todo(scope: Scope, todo_id: str, limit: int = 20) -> AttemptsPage:
    """Return a todo's attempts newest first (the open one included), its total and pruned count.

    Raises ``TodoNotFound`` for an id outside ``scope``, exactly as for an unknown one.
    """
    _check_attempts_limit(limit)
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
        attempts=_attempts(todo_id, limit, total, lease), total=total, pruned=pruned
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


def paused_queues(
    scope: Scope, queues: list[str] | None = None, limit: int = PAUSED_LISTED_MAX
) -> list[QueuePause]:
    """The open pauses of ``scope``'s queues (of ``queues`` only, when given), with their
    endpoints, by endpoint slug and queue, at most ``limit`` (one query).

    Uses index: queue_pauses_open_idx (endpoint_id, queue) WHERE resumed_at IS NULL.
    """
    pauses = QueuePause.objects.filter(
        Q(resumed_at__isnull=True), endpoint__in=Endpoint.objects.filter(scope.endpoints())
    )
    if queues is not None:
        pauses = pauses.filter(queue__in=queues)
    return list(pauses.select_related("endpoint").order_by("endpoint__slug", "queue")[:limit])


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


# --- bulk actions ------------------------------------------------------------------------------

BULK_ACTIONS = ("retry", "cancel")


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
