"""Frozen values the lifecycle returns, each built from a statement's row by ``from_row``."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, fields
from decimal import Decimal
from typing import Any, Self
from uuid import UUID

from attempts.types import NO_USAGE, USAGE_COLUMNS, AttemptView, Usage
from switchboard.lib.actors import COMMAND, Actor
from switchboard.lib.text import money
from todos import states

# Django's psycopg setup loads jsonb as its JSON text (JSONField decodes it itself), so values
# read through connection.cursor() arrive as str and are decoded here.
_JSON_COLUMNS = ("payload", "routing_trace", "result", "input_request")


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


@dataclass(frozen=True, slots=True)
class TodoView:
    id: str
    endpoint_id: UUID
    queue: str
    title: str
    event_id: int | None
    payload: Any
    work_order: str
    routing_trace: Any
    assignee: str | None
    state: str
    owner: str | None
    lease_expires_at: dt.datetime | None
    attempt: int
    max_attempts: int
    claimed_at: dt.datetime | None
    next_retry_at: dt.datetime | None
    result: Any
    created_at: dt.datetime
    updated_at: dt.datetime
    finished_at: dt.datetime | None
    last_ringed_at: dt.datetime | None
    ring_attempts: int
    input_request: Any
    attempts_total: int
    attempts_pruned: int
    priority: int
    not_before: dt.datetime | None
    start_by: dt.datetime | None
    finish_by: dt.datetime | None
    run_timeout_seconds: int | None
    dedupe_key: str | None
    # Not a column: create() found the dedupe key held and returned the todo holding it.
    deduplicated: bool = False
    # The tombstone of a forgotten todo (activity/forget.py): read where a statement returns
    # them (``t.*``), None elsewhere (an agent's own transitions return ``VIEW_COLUMNS``).
    forgotten_at: dt.datetime | None = None
    forgotten_by: str | None = None
    # The cost cap, and the usage columns the OTLP ingest keeps on the row, as read (None when
    # the row read has none): ``usage`` builds the value only when something reads it, so a
    # transition's result pays a tuple, not a Decimal.
    max_cost_usd: Decimal | None = None
    usage_columns: tuple[Any, ...] | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        """The view of a statement's row: ``VIEW_COLUMNS``, and the tombstone and cost columns
        when the row has them.

        Every transition builds one or two, so the fields are stored through their slots
        (``_SETTERS``) instead of the generated ``__init__``: a frozen dataclass's ``__init__`` sets
        each of its 36 fields through ``object.__setattr__``, and building the keyword arguments
        for it cost as much again (4.8 against 8.9 µs a view). It stores what ``__init__`` would,
        the defaults included; ``tests/todos/test_types.py`` holds the two equal."""
        view = _new(cls)
        for name, put, decode in _SETTERS:
            value = row[name]
            put(view, _json(value) if decode else value)
        tombstone = "forgotten_at" in row
        _FORGOTTEN_AT(view, row["forgotten_at"] if tombstone else None)
        _FORGOTTEN_BY(view, row["forgotten_by"] if tombstone else None)
        _DEDUPLICATED(view, False)
        if "cost_usd" in row:
            _MAX_COST(view, row.get("max_cost_usd"))
            _USAGE(view, tuple(row[name] for name in _USAGE_COLUMNS))
        else:
            _MAX_COST(view, None)
            _USAGE(view, None)
        return view

    @property
    def usage(self) -> Usage:
        if self.usage_columns is None:
            return NO_USAGE
        return Usage.from_row(dict(zip(_USAGE_COLUMNS, self.usage_columns, strict=True)))

    @property
    def dead_letter(self) -> bool:
        return states.is_dead_letter(self)

    @property
    def run_deadline(self) -> dt.datetime | None:
        return states.run_deadline(self)


# The field names, read once: dataclasses.fields() builds its tuple on every call, and from_row
# runs on every transition, inside the Django-overhead budget (docs/performance.md, "Budgets").
# Also the columns an agent's own transitions return (todos/lifecycle/statements.py, _view).
# Every other field is one of these, which from_row sets apart.
_SET_APART = ("deduplicated", "forgotten_at", "forgotten_by", "max_cost_usd", "usage_columns")
VIEW_COLUMNS = tuple(f.name for f in fields(TodoView) if f.name not in _SET_APART)
_USAGE_COLUMNS = (*USAGE_COLUMNS, "cost_usd")

# from_row's way in: each field's slot setter, and whether the column is JSON text to decode.
_new = object.__new__


def _slot(name: str) -> Callable[[TodoView, Any], None]:
    setter: Callable[[TodoView, Any], None] = vars(TodoView)[name].__set__
    return setter


_SETTERS = tuple((name, _slot(name), name in _JSON_COLUMNS) for name in VIEW_COLUMNS)
_FORGOTTEN_AT = _slot("forgotten_at")
_FORGOTTEN_BY = _slot("forgotten_by")
_DEDUPLICATED = _slot("deduplicated")
_MAX_COST = _slot("max_cost_usd")
_USAGE = _slot("usage_columns")


@dataclass(frozen=True, slots=True)
class ClaimResult:
    todo: TodoView
    attempt_seq: int
    attempts_total: int
    prior_attempts: tuple[AttemptView, ...]
    took_over: bool
    lease_token: str | None = None


@dataclass(frozen=True, slots=True)
class ReportResult:
    """What complete, release, heartbeat and the other single-todo transitions return."""

    todo: TodoView
    attempt_seq: int | None


@dataclass(frozen=True, slots=True)
class FailResult:
    todo: TodoView
    attempt_seq: int | None

    @property
    def next_retry_at(self) -> dt.datetime | None:
        return self.todo.next_retry_at

    @property
    def dead_letter(self) -> bool:
        return self.todo.dead_letter


@dataclass(frozen=True, slots=True)
class AttemptsPage:
    attempts: tuple[AttemptView, ...]
    total: int
    pruned: int


@dataclass(frozen=True, slots=True)
class SweepResult:
    """Ids a sweep changed, by what became of them."""

    requeued: tuple[str, ...] = ()
    dead_lettered: tuple[str, ...] = ()
    # A run timeout: failed with a retry after the backoff (reap.sql).
    retry_scheduled: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RingResult:
    """A todo the doorbell rang: what the ring was about, and the todo's rings so far."""

    todo_id: str
    endpoint_id: UUID
    queue: str
    reason: str
    ring_attempts: int


@dataclass(frozen=True, slots=True)
class RevokeResult:
    endpoint_revoked: bool
    dead_lettered: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BulkResult:
    """The todos a bulk action acted on (``acted``), and how many the count it was confirmed
    against had shown (``counted``): fewer acted means the rest changed in between."""

    acted: tuple[str, ...]
    counted: int | None = None


@dataclass(frozen=True, slots=True)
class QueueChange:
    """A queue's pause or resume: ``changed`` is False when the queue already stood so."""

    endpoint_id: UUID
    queue: str
    paused: bool
    changed: bool


# The reasons a budget gives its pause (queue_pauses.reason: todos/sql/pause_budget.sql), and
# whose budget each names.
BUDGET_PAUSES = {
    "queue_budget": "its daily budget",
    "endpoint_budget": "its endpoint's daily budget",
}


@dataclass(frozen=True, slots=True)
class PauseWhy:
    """Why a queue is paused, as the Board says it: an operator's pause (by name), the shell's
    (``manage.py queue`` without ``--as``), or the sweeper's for a spent daily budget, which
    lasts until ``until``, the next UTC midnight, unless an operator resumes it first; with
    what the day spent against the budget when the read has them
    (``todos.queries.paused_queues``). A budget's pause and an operator's stop the agents
    alike, so only this tells them apart."""

    paused_by: str  # the actor's spelling (switchboard/lib/actors.py)
    paused_by_name: str | None  # a human's username; None when deleted, or not a human
    reason: str | None
    until: dt.datetime | None
    spent_usd: Decimal | None = None
    budget_usd: Decimal | None = None

    @property
    def budget(self) -> bool:
        """A spent daily budget's pause: an operator's resume lets claims through until the
        next UTC midnight despite the budget (the sweeper does not pause it again that day)."""
        return self.reason in BUDGET_PAUSES

    @property
    def until_text(self) -> str:
        """When a budget's pause ends: ``00:00 UTC``, the next UTC midnight."""
        if self.until is None:
            return "the next UTC day"
        return self.until.astimezone(dt.UTC).strftime("%H:%M UTC")

    @property
    def who(self) -> str:
        """Who paused it: an operator's name, ``manage.py queue``, the sweeper."""
        actor = Actor.parse_or_none(self.paused_by)
        if actor is None:
            return self.paused_by
        if actor.kind == COMMAND:
            return f"manage.py {actor.key}"
        return actor.label(self.paused_by_name)

    @property
    def short(self) -> str:
        """Why, in a few words beside the queue's name (the Overview's row)."""
        if self.budget:
            return f"daily budget spent, until {self.until_text}"
        return f"by {self.who}"

    @property
    def words(self) -> str:
        """Why, in a phrase: ``paused by demo``, or ``paused until 00:00 UTC: its daily budget
        is spent ($0.14 of $0.10)``."""
        if not self.budget:
            return f"paused by {self.who}"
        spent = ""
        if self.spent_usd is not None and self.budget_usd is not None:
            spent = f" ({money(self.spent_usd)} of {money(self.budget_usd)})"
        whose = BUDGET_PAUSES[self.reason or ""]
        return f"paused until {self.until_text}: {whose} is spent{spent}"


@dataclass(frozen=True, slots=True)
class QueueLimits:
    """An endpoint's queue's limits as set (``todos.lifecycle.set_queue_limits``); None: none.
    ``changed`` is False when the call set what was already there."""

    endpoint_id: UUID
    queue: str
    max_in_flight: int | None
    claims_per_minute: int | None
    run_timeout_seconds: int | None
    changed: bool = True
    default_max_cost_usd: Decimal | None = None
    daily_budget_usd: Decimal | None = None


@dataclass(frozen=True, slots=True)
class QueueEmpty:
    """Why one queue an agent's ``claim_next`` asked for gave nothing (``queries.why_empty``).

    ``reason``: ``paused`` (``paused_by``: ``operator``, or the sweeper's ``queue_budget`` or
    ``endpoint_budget`` for a spent daily budget, which ends at ``at``, the next UTC midnight,
    unless the budget stops being spent or an operator resumes it first); ``max_in_flight``
    (``in_flight`` of ``max_in_flight`` held); ``rate`` (the next token at ``at``); ``busy``
    (claimable todos exist, other claims had them); ``not_before`` (all its work is scheduled,
    the earliest at ``at``); ``empty``.
    """

    queue: str
    reason: str
    at: dt.datetime | None = None
    in_flight: int | None = None
    max_in_flight: int | None = None
    paused_by: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> QueueEmpty:
        """The one reason of a ``claim_empty.sql`` row: the operator's (paused, then the
        limits) before the work's (busy, not_before, empty)."""
        queue, limit, held = row["queue"], row["max_in_flight"], row["in_flight"]
        if row["paused"]:
            budget = row["pause_reason"] in BUDGET_PAUSES
            return cls(
                queue,
                "paused",
                at=row["pause_until"] if budget else None,
                paused_by=row["pause_reason"] if budget else "operator",
            )
        if limit is not None and held >= limit:
            return cls(queue, "max_in_flight", in_flight=held, max_in_flight=limit)
        if row["claims_per_minute"] is not None and row["tokens_now"] < 1:
            return cls(queue, "rate", at=row["next_token_at"])
        if row["claimable"]:
            return cls(queue, "busy", max_in_flight=limit)
        if row["not_before"] is not None:
            return cls(queue, "not_before", at=row["not_before"])
        return cls(queue, "empty")
