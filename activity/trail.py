"""One todo's story, for its trail page: ``todo_trail`` reads it, ``merge`` puts it in order;
and what its holders reported as they went, for the MCP App (``progress``).

Four reads make a trail, owner-scoped first: the todo (``todos.queries.todo_in_scope``, which
raises ``TodoNotFound`` for a foreign id exactly as for an unknown one), the webhook delivery it
came from, its attempts, and then its ``todo_activity`` rows. That last read has no owner
predicate of its own, so it is private to this module and runs only after the todo was found
in scope. Each read is one query whatever the number of attempts or rows, so the page costs
the same for a todo with two attempts as for one with two hundred.

``merge`` is pure (no database): it sorts every entry by time with a fixed tie-break for
entries written by one statement, which share ``now()`` (event < created < claim < activity <
end), and groups them by attempt. An activity row belongs to the attempt it names while that
attempt is open or at its end; a row after the end (a retry, the sweeper's requeue) stands
between attempts, as do the doorbell's rings and everything before the first claim. An attempt
the per-todo cap pruned keeps the rows that name it, shown as "attempt N (pruned)".
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from pathlib import Path
from typing import Any, Self

from django.utils.timezone import localtime

from activity.models import Kind
from attempts.models import ClaimerKind
from otlp import store as spans
from otlp.waterfall import Waterfall, build_waterfall
from switchboard import actors, runtime_settings
from switchboard.actors import Names
from switchboard.lib.actors import Actor
from switchboard.lib.sql import fetch_all, load
from switchboard.lib.text import money
from switchboard.scope import Scope
from todos import queries
from todos.models import Event, State, Todo
from todos.queries import TodoDetail, TrailAttempt

# The newest rows a trail shows; the per-todo cap (activity_max_per_todo, 500 by default)
# usually keeps fewer.
TRAIL_ACTIVITY_LIMIT = 1000

_ACTIVITY = load(Path(__file__).parent / "sql", "trail_activity")
_PROGRESS = load(Path(__file__).parent / "sql", "todo_progress")
# The newest progress notes get_todo carries (for the MCP App, which shows them as they come).
NOTES_SHOWN = 10


_STATES = frozenset(State.values)  # read once: ``values`` builds its list on every access

# What each action recorded in ``detail.action`` reads as, after its actor's name.
_ACTION_WORDS = {
    "claim": "claimed it",
    "complete": "completed it",
    "fail": "failed it",
    "release": "released it to its queue",
    "retry": "retried it",
    "extend": "extended the lease",
    "cancel": "canceled it",
    "resume": "resumed it",
    "interrupt": "paused it for input",
    "reject": "rejected it",
    "forget": "forgot it",
}


# Why a deadline's row dead-lettered the todo (``detail.reason``: todos/sql/deadlines.sql).
_DEADLINE_REASONS = {
    "finish_by": "It missed its finish-by deadline.",
    "start_by": "Nobody claimed it before its start-by deadline.",
}


def activity_words(kind: str, detail: Mapping[str, Any]) -> str:
    """What an activity row says happened, as a phrase after its actor's name.

    ``detail`` is stored JSON: an unknown action is named as stored, for the template to escape.
    """
    if kind == Kind.NOTE:
        return "noted"
    if kind == Kind.RETRIED:
        return "requeued it: its retry was due"
    if kind == Kind.RUNG:
        return "rang the doorbell"
    if kind in (Kind.DEADLINE, Kind.BUDGET):
        return "dead-lettered it"  # the sweeps' only action; the reason says why
    action = detail.get("action")
    if isinstance(action, str) and action:
        words = _ACTION_WORDS.get(action, action)
        # A bulk retry, cancel or forget marks each row it writes (todos/lifecycle/bulk.py):
        # the todo was one of a filter's, not picked out.
        return f"{words}, in a bulk action" if detail.get("bulk") is True else words
    return "acted on it"


def _cost_cap_reason(detail: Mapping[str, Any]) -> str:
    """Why the cost cap dead-lettered a todo, with the sums its row recorded (none once the
    todo was forgotten: forgetting keeps only the action)."""
    cap, cost = detail.get("max_cost_usd"), detail.get("cost_usd")
    if cap is None:
        return "Its cost reached its cap."
    spent = f" ({money(cost)} spent)" if cost is not None else ""
    return f"Its cost reached its cap of {money(cap)}{spent}."


class Said:
    """The words of an activity row, shared by the trail's rows and the feed's entries."""

    __slots__ = ()
    at: dt.datetime
    kind: str
    detail: dict[str, Any]
    message: str | None

    @property
    def words(self) -> str:
        return activity_words(self.kind, self.detail)

    @property
    def transition(self) -> tuple[str, str] | None:
        """The state change a Board action, an A2A transition or a retry records, if any: two
        known states only, so the page may name a state's class after them. An action that
        left the state as it was (a forget, a lease extended) records it twice, and changed
        none: ``completed → completed`` would read as if it had."""
        before, after = self.detail.get("from"), self.detail.get("to")
        if before in _STATES and after in _STATES and before != after:
            return (before, after)
        return None

    @property
    def reason(self) -> str:
        """The reason a Board action gave (``detail.reason``), else the row's message; a
        sweep's dead letter in words, not the column it stores (``finish_by``,
        ``max_cost_usd``): the attempt's end keeps that, as its summary."""
        if self.kind == Kind.DEADLINE:
            why = self.detail.get("reason")
            return _DEADLINE_REASONS.get(
                why if isinstance(why, str) else "", "Its deadline passed."
            )
        if self.kind == Kind.BUDGET:
            return _cost_cap_reason(self.detail)
        reason = self.detail.get("reason")
        return reason if isinstance(reason, str) and reason else (self.message or "")

    @property
    def iso(self) -> str:
        """``at`` for a ``<time datetime>``: the same instant in any time zone."""
        return self.at.isoformat()

    @property
    def stamp(self) -> str:
        """``at`` as the page shows it, in the current time zone (the ``date`` filter's
        "Y-m-d H:i:s T", at a fraction of its cost on a page of hundreds of entries)."""
        return localtime(self.at).strftime("%Y-%m-%d %H:%M:%S %Z")

    @property
    def subscribers(self) -> int | None:
        """How many listeners a ring reached."""
        n = self.detail.get("subscribers")
        return n if type(n) is int else None


@dataclass(frozen=True, slots=True)
class ActivityRow(Said):
    """One ``todo_activity`` row, with who acted as people read it once resolved."""

    seq: int
    attempt_seq: int | None
    at: dt.datetime
    kind: str
    actor_kind: str
    actor_ref: str
    actor_label: str | None  # set by ``todo_trail`` from switchboard/actors.py
    message: str | None
    truncated: bool
    detail: dict[str, Any]

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        # Django's connection loads jsonb as its text (JSONField decodes it itself).
        detail = row["detail"]
        if isinstance(detail, str):
            detail = json.loads(detail)
        return cls(
            seq=row["seq"],
            attempt_seq=row["attempt_seq"],
            at=row["at"],
            kind=row["kind"],
            actor_kind=row["actor_kind"],
            actor_ref=row["actor_ref"],
            actor_label=None,
            message=row["message"],
            truncated=bool(row["truncated"]),
            detail=detail if isinstance(detail, dict) else {},
        )

    @property
    def actor(self) -> str:
        """Who did it, as people read it (``human:<id>`` → the username …), once resolved."""
        return self.actor_label or self.actor_ref


class Rank(IntEnum):
    """The tie-break between entries at the same instant (one statement shares ``now()``)."""

    EVENT = 0
    CREATED = 1
    CLAIM = 2
    ACTIVITY = 3
    END = 4


# Entry kinds that are not activity rows.
EVENT, CREATED, CLAIM, END = "event", "created", "claim", "end"
_RANKS = {EVENT: Rank.EVENT, CREATED: Rank.CREATED, CLAIM: Rank.CLAIM, END: Rank.END}


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """One thing that happened: the delivery, the creation, a claim, an activity row, an end.

    ``kind`` is ``event``, ``created``, ``claim``, ``end`` or the activity row's kind;
    ``attempt_seq`` is the attempt group it sits in (None: it stands alone); ``seq`` orders
    entries of one rank at one instant (the attempt's or the row's seq).
    """

    at: dt.datetime
    kind: str
    seq: int = 0
    attempt_seq: int | None = None
    attempt: TrailAttempt | None = None
    activity: ActivityRow | None = None

    @property
    def rank(self) -> Rank:
        return _RANKS.get(self.kind, Rank.ACTIVITY)

    @property
    def sort_key(self) -> tuple[dt.datetime, int, int]:
        return (self.at, self.rank, self.seq)

    @property
    def iso(self) -> str:
        """``at`` for a ``<time datetime>``: the same instant in any time zone."""
        return self.at.isoformat()

    @property
    def stamp(self) -> str:
        """``at`` as the page shows it, in the current time zone (the ``date`` filter's
        "Y-m-d H:i:s T", at a fraction of its cost on a page of hundreds of entries)."""
        return localtime(self.at).strftime("%Y-%m-%d %H:%M:%S %Z")

    @property
    def anchor(self) -> str:
        """The entry's fragment id on the page, stable across renders."""
        if self.activity is not None:
            return f"activity-{self.activity.seq}"
        if self.kind in (CLAIM, END):
            return f"attempt-{self.seq}-{self.kind}"
        return self.kind


@dataclass(frozen=True, slots=True)
class AttemptGroup:
    """An attempt's entries: its claim and the rows that name it, in order, then its end.

    ``attempt`` is None when no attempt row was read for ``seq``: ``pruned`` when the per-todo
    cap removed it, else it is older than the trail's read (``TRAIL_ATTEMPTS_LIMIT``).
    """

    seq: int
    attempt: TrailAttempt | None
    entries: tuple[TimelineEntry, ...]
    end: TimelineEntry | None
    pruned: bool = False

    @property
    def last_heartbeat_at(self) -> dt.datetime | None:
        return None if self.attempt is None else self.attempt.view.last_heartbeat_at


@dataclass(frozen=True, slots=True)
class Block:
    """One item of the timeline: an attempt group, or an entry standing alone."""

    entry: TimelineEntry | None = None
    group: AttemptGroup | None = None


def merge(
    *,
    created_at: dt.datetime,
    attempts: Iterable[TrailAttempt],
    activity: Iterable[ActivityRow],
    attempts_pruned: int = 0,
    event_at: dt.datetime | None = None,
) -> tuple[Block, ...]:
    """Put a todo's entries in time order and group them by attempt (pure: no database).

    Blocks follow each other by their first entry; inside an attempt group, its entries keep
    time order and its end comes last. See the module docstring for which rows join a group.
    """
    by_seq = {a.view.seq: a for a in attempts}
    entries: list[TimelineEntry] = [TimelineEntry(created_at, CREATED)]
    if event_at is not None:
        entries.append(TimelineEntry(event_at, EVENT))
    for a in by_seq.values():
        view = a.view
        entries.append(TimelineEntry(view.claimed_at, CLAIM, view.seq, view.seq, attempt=a))
        if view.ended_at is not None:
            entries.append(TimelineEntry(view.ended_at, END, view.seq, view.seq, attempt=a))
    for row in activity:
        joins = _group_of(row, by_seq)
        entries.append(TimelineEntry(row.at, row.kind, row.seq, joins, activity=row))
    entries.sort(key=lambda e: e.sort_key)

    blocks: list[int | TimelineEntry] = []  # a group by its seq, or a lone entry
    grouped: dict[int, list[TimelineEntry]] = {}
    for entry in entries:
        if entry.attempt_seq is None:
            blocks.append(entry)
            continue
        if entry.attempt_seq not in grouped:
            grouped[entry.attempt_seq] = []
            blocks.append(entry.attempt_seq)
        grouped[entry.attempt_seq].append(entry)

    def group_of(seq: int) -> AttemptGroup:
        members = grouped[seq]
        end = next((e for e in members if e.kind == END), None)
        attempt = by_seq.get(seq)
        return AttemptGroup(
            seq=seq,
            attempt=attempt,
            entries=tuple(e for e in members if e is not end),
            end=end,
            pruned=attempt is None and seq <= attempts_pruned,
        )

    return tuple(Block(group=group_of(b)) if isinstance(b, int) else Block(entry=b) for b in blocks)


def _group_of(row: ActivityRow, attempts: dict[int, TrailAttempt]) -> int | None:
    """The attempt group an activity row joins, or None when it stands alone."""
    if row.attempt_seq is None or row.kind == Kind.RUNG:
        return None
    attempt = attempts.get(row.attempt_seq)
    if attempt is None:  # pruned or not read: the rows that name it still make its group
        return row.attempt_seq
    ended_at = attempt.view.ended_at
    return row.attempt_seq if ended_at is None or row.at <= ended_at else None


@dataclass(frozen=True, slots=True)
class Trail:
    """Everything the trail page shows, read in four queries at most."""

    todo: Todo
    event: Event | None
    attempts: tuple[TrailAttempt, ...]  # newest first
    activity: tuple[ActivityRow, ...]  # oldest first
    blocks: tuple[Block, ...]
    # More rows than the page reads: the oldest are left out.
    activity_truncated: bool
    # Each attempt group's spans, drawn (attempts without spans have none).
    waterfalls: Mapping[int, Waterfall] = field(default_factory=dict)
    # The names behind the trail's actors and operator leases (switchboard/actors.py).
    names: Names = field(default_factory=Names)
    # Spans older than this were removed by span retention (otlp/partitions.py): the waterfalls
    # say so where an attempt stored more spans than it still holds.
    span_retention_days: int = 0

    @property
    def attempts_not_shown(self) -> int:
        """Stored attempts older than the trail's read (pruned ones are not stored)."""
        stored = self.todo.attempts_total - self.todo.attempts_pruned
        return max(0, stored - len(self.attempts))


def todo_trail(scope: Scope | int, todo_id: str, known: Mapping[Actor, str] | None = None) -> Trail:
    """Read one todo's trail in the scope of ``scope`` (a ``Scope``, or a human's id).

    Raises ``TodoNotFound`` for a todo outside the scope, exactly as for an unknown one, before
    anything else is read. Six queries at most: the todo, its event (only when it has one), its
    attempts, its activity, the names of its actors (only when one is neither the todo's
    endpoint nor in ``known``, the names the caller holds: the viewer's), and its attempts'
    spans (only when it has attempt groups).
    """
    if not isinstance(scope, Scope):
        scope = Scope.of_human(scope)
    todo = queries.todo_in_scope(scope, todo_id)
    event = queries.event_for_todo(scope, todo_id) if todo.event_id is not None else None
    attempts = queries.trail_attempts(scope, todo_id)
    activity = _activity(todo.id, TRAIL_ACTIVITY_LIMIT)
    names = actors.resolve(
        [todo.owner, *(r.actor_ref for r in activity)]
        + [a.view.owner for a in attempts if a.view.claimer_kind == ClaimerKind.OWNER],
        {Actor.endpoint(todo.endpoint_id): todo.endpoint.slug, **(known or {})},
    )
    activity = tuple(replace(r, actor_label=names.label(r.actor_ref)) for r in activity)
    blocks = merge(
        created_at=todo.created_at,
        event_at=None if event is None else event.received_at,
        attempts=attempts,
        activity=activity,
        attempts_pruned=todo.attempts_pruned,
    )
    return Trail(
        todo=todo,
        event=event,
        attempts=attempts,
        activity=activity,
        blocks=blocks,
        activity_truncated=len(activity) >= TRAIL_ACTIVITY_LIMIT,
        waterfalls=_waterfalls(
            todo.id, [b.group.seq for b in blocks if b.group is not None], todo.created_at
        ),
        names=names,
        span_retention_days=runtime_settings.current().span_retention_days,
    )


def _waterfalls(todo_id: str, seqs: Sequence[int], created_at: dt.datetime) -> dict[int, Waterfall]:
    """Each attempt's waterfall, up to ``waterfall_max_spans`` bars, the rest counted."""
    if not seqs:
        return {}
    limit = runtime_settings.current().waterfall_max_spans
    return {
        seq: build_waterfall(attempt, limit)
        for seq, attempt in spans.spans_for_todo(todo_id, seqs, limit, created_at).items()
    }


def _activity(todo_id: str, limit: int) -> tuple[ActivityRow, ...]:
    """The todo's newest ``limit`` activity rows, oldest first. Unscoped: call it only for a
    todo already found in the caller's scope (``todo_trail`` does)."""
    rows: Sequence[dict[str, Any]] = fetch_all(_ACTIVITY, {"todo_id": todo_id, "limit": limit})
    return tuple(ActivityRow.from_row(row) for row in reversed(rows))


@dataclass(frozen=True, slots=True)
class Note:
    """A holder's progress note (a heartbeat's ``note``): its attempt, when, and its text
    (None once the todo was forgotten: activity/forget.py)."""

    attempt_seq: int | None
    at: dt.datetime
    text: str | None
    truncated: bool


@dataclass(frozen=True, slots=True)
class Progress:
    """What a todo's holders reported as they went: its newest notes and its spans counted."""

    notes: tuple[Note, ...]  # newest first
    spans: int  # stored (the caps' refusals are counted on the todo and its attempts)
    span_errors: int  # of them, those whose status is error


def progress(detail: TodoDetail, notes: int = NOTES_SHOWN) -> Progress:
    """The newest ``notes`` progress notes of the todo ``detail`` holds and its spans counted,
    in one query (``todo_progress.sql``). ``detail`` is what the owner-scoped read returned
    (``todos.queries.todo_detail``), so this never reads a todo outside the caller's scope."""
    params = {"todo_id": detail.todo.id, "notes": notes, "since": detail.todo.created_at}
    row = fetch_all(_PROGRESS, params)[0]
    return Progress(
        notes=tuple(
            Note(attempt_seq, at, text, truncated)
            for attempt_seq, at, text, truncated in zip(
                row["note_attempts"],
                row["note_at"],
                row["note_texts"],
                row["note_truncated"],
                strict=True,
            )
        ),
        spans=int(row["spans"]),
        span_errors=int(row["span_errors"]),
    )
