"""The todo list's filters and its keyset cursor: the one definition of "the todos the list
shows", which the Board's list and counts, MCP's list_todos, A2A's ListTasks and the bulk
actions (``todos/lifecycle/bulk.py``) all build, and the cursor that continues a page.

Pure: no read runs here. ``todos/queries.py`` runs the list; the lifecycle's bulk statements
splice ``TodoFilters.where`` in.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL

from switchboard.lib import jsonlimits, keyset
from switchboard.lib.sql import load
from todos.states import State

if TYPE_CHECKING:
    from todos.models import Todo

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
    # What its model calls cost (kept on the row by the OTLP ingest); the cursor carries it as
    # text, which PostgreSQL reads back as the numeric it compares with.
    "cost": ("t.cost_usd", "t.cost_usd"),
}
TIME_SORTS = frozenset({"updated", "finished"})
NUMERIC_SORTS = frozenset({"cost"})
SORTS = tuple(f"{sign}{name}" for name in SORT_KEYS for sign in ("-", ""))
# Search: a todo id alone finds that todo through todos_pkey; anything else is a
# case-insensitive substring of todo_search_text (todos/migrations/0013_todo_search.py), kept in
# todo_search (0014) and read through todo_search_text_idx, which needs three letters or digits
# in a row to narrow anything.
Q_MAX_CHARS = 200
TODO_ID = re.compile(r"td_[a-z2-7]{20}")
_TRIGRAM = re.compile(r"[^\W_]{3}")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
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
_DEAD_LETTER_SQL = load(Path(__file__).resolve().parent / "sql", "_dead_letter")


@dataclass(frozen=True, slots=True)
class Cursor:
    """A keyset position: the (created_at, id) of the last row shown, and for a sort other than
    newest first, the sort and the row's sort key (``SORT_KEYS``).

    Its text is opaque to clients (``switchboard/lib/keyset.py`` of ``["<created_at>", "<id>"]``,
    the time in UTC with its microseconds, which the keyset needs; a sorted list's adds the sort
    and the key); the Board carries it in its URLs and MCP returns it as ``next_cursor``.
    """

    created_at: dt.datetime
    id: str
    sort: str = DEFAULT_SORT
    key: dt.datetime | str | None = None

    @classmethod
    def after(cls, todo: Todo, sort: str = DEFAULT_SORT) -> Cursor:
        key = getattr(todo, "sort_key", None) if SORT_KEYS[sort.lstrip("-")] else None
        if isinstance(key, Decimal):
            key = str(key)
        return cls(todo.created_at, todo.id, sort, key)

    def encode(self) -> str:
        value: list[Any] = [keyset.stamp(self.created_at), self.id]
        if self.sort != DEFAULT_SORT:
            key = keyset.stamp(self.key) if isinstance(self.key, dt.datetime) else self.key
            value += [self.sort, key]
        return keyset.encode(value)

    @classmethod
    def decode(cls, text: str) -> Cursor | None:
        """The cursor ``text`` names, or None when it is not one ``encode`` made."""
        value = keyset.decode(text)
        if value is None or len(value) not in (2, 4):
            return None
        stamp, todo_id = value[:2]
        sort, key = value[2:] if len(value) == 4 else (DEFAULT_SORT, None)
        if not (isinstance(stamp, str) and isinstance(todo_id, str) and todo_id):
            return None
        if len(todo_id) > 64 or jsonlimits.text_problem(todo_id) is not None:
            return None  # names no todo, and PostgreSQL could not compare it
        created_at = keyset.parse_stamp(stamp)
        if created_at is None or sort not in SORTS:
            return None
        name = sort.lstrip("-")
        if SORT_KEYS[name] is None:
            return cls(created_at, todo_id, sort) if key is None else None
        if not isinstance(key, str) or len(key) > SORT_KEY_MAX_CHARS:
            return None
        if name in TIME_SORTS:
            moment = keyset.parse_stamp(key)
            return None if moment is None else cls(created_at, todo_id, sort, moment)
        if name in NUMERIC_SORTS:
            try:
                amount = Decimal(key)
            except InvalidOperation:
                return None
            return cls(created_at, todo_id, sort, key) if amount.is_finite() else None
        if jsonlimits.text_problem(key) is not None:
            return None
        return cls(created_at, todo_id, sort, key)


def keyset_order(sort: str) -> tuple[str, str, str]:
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
