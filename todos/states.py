"""The todo state machine, once: the states, their sets, and the predicates every surface asks.

Each predicate exists in three forms that must agree:

- on a loaded row (``is_claimable(todo, now)`` …), for what a page shows of one todo;
- as a ``Q`` and a ``TodoQuerySet`` method (``todos/models.py``: ``Todo.objects.claimable()`` …),
  for counts and lists;
- as an SQL fragment in ``todos/sql/_<name>.sql``, which the lifecycle statements splice in.

The lifecycle's statements decide; the Python forms only say what they would decide, so that a
page hides a button that would answer a conflict and a count shows what a claim would find.
``tests/todos/test_states.py`` reaches every state through real transitions and checks, row by
row, that the three forms agree with each other, with a table written out by hand, and (for
the operator actions) with what the operator statements actually accept.

The one thing the Python forms leave out is the SQL's ``@{current_attempt}`` guard
(``todos/sql/_current_attempt.sql``). It is about snapshots: a statement that waited on a row
lock must see the open attempt it would close. On a committed row it always holds (every claim
opens the attempt in the statement that claims, and whatever ends a claim closes it in the
statement that ends it), so on a loaded row or in a read there is nothing to check.

Nothing here imports a model: ``todos.models`` builds ``Todo.objects`` (its ``TodoQuerySet``)
from the ``Q`` predicates here.
"""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Now


class State(models.TextChoices):
    """The values of ``todos.state``, as its CHECK lists them (tests/switchboard/test_schema.py)."""

    PENDING = "pending"
    CLAIMED = "claimed"
    INPUT_REQUIRED = "input-required"
    AUTH_REQUIRED = "auth-required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"
    REJECTED = "rejected"


# The holder's claim waits on a human's input or authorization (A2A interrupt): its lease is held
# without an expiry, never reaped, until an answer resumes it. Not a queue pause
# (todos/lifecycle/queues.py), which stops claims and leaves leases alone.
AWAITING_INPUT_STATES = (State.INPUT_REQUIRED, State.AUTH_REQUIRED)
# A holder has the todo: its lease runs (claimed) or is held awaiting input. SQL: _in_flight.sql.
IN_FLIGHT_STATES = (State.CLAIMED, *AWAITING_INPUT_STATES)
# No holder works on it and no claim takes it as it stands (A2A's terminal task states). Every
# one is finished except ``failed`` with a retry scheduled, which comes back by itself: use
# ``is_finished``/``is_unfinished`` for "done for good".
TERMINAL_STATES = (State.COMPLETED, State.FAILED, State.CANCELED, State.REJECTED)
# What a human may send back to pending with a fresh budget (todos/sql/retry.sql).
RETRYABLE_STATES = (State.FAILED, State.CANCELED, State.REJECTED)

# The operator actions of the Board, in the order the drawer offers them. Each is one operator
# transition in todos.lifecycle (operator_claim, operator_extend, …).
OPERATOR_ACTIONS = ("claim", "extend", "retry", "complete", "fail", "release", "cancel")
# What an operator may do to a claimed todo, whoever holds it and whether or not its lease has
# lapsed: the operator statements guard on the human's scope, never on the holder or the lease.
HOLDER_ACTIONS = frozenset({"extend", "complete", "fail", "release"})


class TodoRow(Protocol):
    """What the predicates read of a todo: a ``Todo`` or a ``todos.types.TodoView``."""

    @property
    def state(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def lease_expires_at(self) -> dt.datetime | None: ...
    @property
    def next_retry_at(self) -> dt.datetime | None: ...
    @property
    def not_before(self) -> dt.datetime | None: ...
    @property
    def start_by(self) -> dt.datetime | None: ...
    @property
    def attempts_total(self) -> int: ...
    @property
    def finish_by(self) -> dt.datetime | None: ...


# --- on a loaded row ---------------------------------------------------------------------------


def has_budget(todo: TodoRow) -> bool:
    """Another claim may still count against ``max_attempts``."""
    return todo.attempt < todo.max_attempts


def is_claimable(todo: TodoRow, now: dt.datetime) -> bool:
    """A claim would take it at ``now``: todos/sql/_claimable.sql.

    Pending and not past its ``start_by`` (the deadline sweep dead-letters it) unless it was
    claimed before (``start_by`` bounds the first claim only); claimed with a
    lapsed lease and budget left (a takeover); failed with a due retry and budget left; in
    every case due (``not_before`` unset or passed) and not past its ``finish_by``. ``now``
    stands for the statement's ``now()``.
    """
    if todo.not_before is not None and todo.not_before > now:
        return False
    if todo.finish_by is not None and todo.finish_by <= now:
        return False
    if todo.state == State.PENDING:
        return todo.start_by is None or todo.start_by > now or todo.attempts_total > 0
    if todo.state == State.CLAIMED:
        lapsed = todo.lease_expires_at is not None and todo.lease_expires_at < now
        return lapsed and has_budget(todo)
    if todo.state == State.FAILED:
        due = todo.next_retry_at is not None and todo.next_retry_at <= now
        return due and has_budget(todo)
    return False


def is_in_flight(todo: TodoRow) -> bool:
    """A holder has it (its lease runs or is held awaiting input): todos/sql/_in_flight.sql."""
    return todo.state in IN_FLIGHT_STATES


def is_dead_letter(todo: TodoRow) -> bool:
    """Failed with no retry scheduled: it runs again only if a human retries it.
    todos/sql/_dead_letter.sql."""
    return todo.state == State.FAILED and todo.next_retry_at is None


def is_unfinished(todo: TodoRow) -> bool:
    """Not done for good: pending, in flight, or failed awaiting a retry. What cancel moves to
    canceled and revoking an endpoint dead-letters: todos/sql/_unfinished.sql. The schema's
    ``todos_finished_when_final`` CHECK sets ``finished_at`` exactly on the others."""
    return (
        todo.state == State.PENDING
        or todo.state in IN_FLIGHT_STATES
        or (todo.state == State.FAILED and todo.next_retry_at is not None)
    )


def is_finished(todo: TodoRow) -> bool:
    """Done for good (``finished_at`` is set): completed, canceled, rejected, or a dead letter."""
    return not is_unfinished(todo)


def operator_actions(
    todo: TodoRow, now: dt.datetime, *, endpoint_revoked: bool = False
) -> frozenset[str]:
    """The operator actions the owning human's statements would accept for ``todo`` at ``now``.

    - claim: it is claimable (``todos/sql/claim.sql``; an operator claim ignores the assignee);
    - extend, complete, fail, release: it is claimed, whoever holds it, lapsed or not;
    - retry: failed (dead letter or not), canceled or rejected, and its endpoint not revoked
      (``todos/sql/retry.sql``);
    - cancel: it is unfinished (``todos/sql/cancel.sql``).

    The statements still decide (the todo may move on before the button is pressed); this
    hides the buttons that would only answer a conflict.
    """
    actions: set[str] = set()
    if is_claimable(todo, now):
        actions.add("claim")
    if todo.state == State.CLAIMED:
        actions |= HOLDER_ACTIONS
    if todo.state in RETRYABLE_STATES and not endpoint_revoked:
        actions.add("retry")
    if is_unfinished(todo):
        actions.add("cancel")
    return frozenset(actions)


class TimedRow(TodoRow, Protocol):
    """What ``run_deadline`` reads besides a ``TodoRow``'s."""

    @property
    def claimed_at(self) -> dt.datetime | None: ...
    @property
    def run_timeout_seconds(self) -> int | None: ...


def run_deadline(todo: TimedRow) -> dt.datetime | None:
    """When the current run must end: the earlier of the todo's finish_by and, while a holder
    has it, claimed_at + run_timeout_seconds; None when neither applies. No lease runs past it
    (todos/sql/_lease_cap.sql)."""
    limits = [todo.finish_by] if todo.finish_by is not None else []
    if todo.state in IN_FLIGHT_STATES and todo.claimed_at and todo.run_timeout_seconds:
        limits.append(todo.claimed_at + dt.timedelta(seconds=todo.run_timeout_seconds))
    return min(limits) if limits else None


# --- as ORM predicates -------------------------------------------------------------------------
# ``prefix`` reaches todos through a relation (``todos__`` from an endpoint), as Scope.todos().


def claimable_q(prefix: str = "") -> Q:
    """``is_claimable`` at the database's ``now()``: todos/sql/_claimable.sql."""
    p = prefix
    budget = Q(**{f"{p}attempt__lt": F(f"{p}max_attempts")})
    timely = (Q(**{f"{p}not_before__isnull": True}) | Q(**{f"{p}not_before__lte": Now()})) & (
        Q(**{f"{p}finish_by__isnull": True}) | Q(**{f"{p}finish_by__gt": Now()})
    )
    started_in_time = (
        Q(**{f"{p}start_by__isnull": True})
        | Q(**{f"{p}start_by__gt": Now()})
        | Q(**{f"{p}attempts_total__gt": 0})
    )
    return timely & (
        (Q(**{f"{p}state": State.PENDING}) & started_in_time)
        | (Q(**{f"{p}state": State.CLAIMED, f"{p}lease_expires_at__lt": Now()}) & budget)
        | (
            Q(
                **{
                    f"{p}state": State.FAILED,
                    f"{p}next_retry_at__isnull": False,
                    f"{p}next_retry_at__lte": Now(),
                }
            )
            & budget
        )
    )


def in_flight_q(prefix: str = "") -> Q:
    """``is_in_flight``: todos/sql/_in_flight.sql."""
    return Q(**{f"{prefix}state__in": IN_FLIGHT_STATES})


def dead_letter_q(prefix: str = "") -> Q:
    """``is_dead_letter``: todos/sql/_dead_letter.sql."""
    return Q(**{f"{prefix}state": State.FAILED, f"{prefix}next_retry_at__isnull": True})


def unfinished_q(prefix: str = "") -> Q:
    """``is_unfinished``: todos/sql/_unfinished.sql."""
    return (
        Q(**{f"{prefix}state": State.PENDING})
        | in_flight_q(prefix)
        | Q(**{f"{prefix}state": State.FAILED, f"{prefix}next_retry_at__isnull": False})
    )


def finished_q(prefix: str = "") -> Q:
    """``is_finished``: ``finished_at IS NOT NULL``, by the schema's CHECK (retention reads it)."""
    return Q(**{f"{prefix}finished_at__isnull": False})
