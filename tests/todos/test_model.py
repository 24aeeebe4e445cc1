"""A model of the lifecycle: Hypothesis drives the real transitions against a plain-Python model.

The model (``Model``) is the lifecycle written out as small Python: per todo its state, the
attempts it spent and may spend, its holder, its lease (live or lapsed), its retry (none, ahead,
due) and its attempts with how each ended; per queue whether it is paused. Every rule calls the
real lifecycle (create, claim by id and claim_next, heartbeat, complete, fail, release,
interrupt and resume, cancel and retry by the owning human, pause and resume of the queue, the
reaper and the retry requeue), asks the model what must happen (taken or refused, and the state
after), and after every step ``check`` compares the whole database with the model: each todo's
row, its attempt rows (exactly one open attempt while it is held, each closed once with the
outcome and disposition the model says), and the state predicates in all three forms (Python on
the loaded row, the ORM filter, the SQL fragment the statements splice in) with each other and
with the model.

Time: PostgreSQL's ``now()`` is one instant in the test's transaction, so "the clock moves" is a
rule that moves a lease or a retry into the past on the row (``tests/reach.py``), as the other
lifecycle tests do. Each example runs in a transaction rolled back at its end.

Replayable: Hypothesis replays an example's choices to shrink a failure, so every choice the
machine offers is listed in the order the todos were created (their ids are random), and
claim_next takes them in that order too (each created a second before the next).

Not modelled: deadlines and run timeouts (``tests/todos/test_time.py``), queue limits
(``tests/todos/test_queue_limits.py``), fences and concurrency (``tests/concurrency/``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import transaction
from django.db.models import Value
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from switchboard.lib.errors import LifecycleError
from switchboard.lib.sql import fetch_all, load
from switchboard.scope import Scope
from tests.base import Personas, make_personas
from tests.reach import expire_lease, set_created_at
from todos import lifecycle, states
from todos.models import Todo
from todos.states import State
from todos.types import TodoView

pytestmark = pytest.mark.django_db

QUEUE = "model"
AGENTS = ("w1", "w2")
PREDICATES = ("claimable", "in_flight", "dead_letter", "unfinished")
# At most this many todos in an example: every step checks each, and fewer todos meet more
# transitions each.
MAX_TODOS = 6
ORM_METHODS = {"dead_letter": "dead_lettered"}  # Todo.objects' name, where it differs
# The todos as stored, with what the model asks of the clock and the predicates' SQL forms
# (the fragments the statements splice in).
ROWS_SQL = (
    "SELECT t.*, now() AS db_now, t.lease_expires_at > now() AS live,"
    " t.next_retry_at <= now() AS due, "
    + ", ".join(f"({load(lifecycle.statements.SQL_DIR, '_' + p)}) AS sql_{p}" for p in PREDICATES)
    + " FROM todos t WHERE t.id = ANY(%(ids)s)"
)
# The rows read, loaded as the ORM loads a row (Model.from_db), for the Python forms on a
# model instance.
DB = "default"
FIELDS = [f.attname for f in Todo._meta.concrete_fields]
COLUMNS = [f.column for f in Todo._meta.concrete_fields]
SHOWN = ("state", "attempt", "owner", "lease_expires_at", "next_retry_at")


@functools.cache
def orm_forms() -> tuple[str, tuple[Any, ...]]:
    """The ORM forms of the predicates (each one's manager filter: ``Todo.objects.claimable()``
    …) as one query, compiled once: every step runs it, and compiling it is most of its cost."""
    first, *rest = (
        getattr(Todo.objects, ORM_METHODS.get(p, p))()
        .annotate(predicate=Value(p))
        .values_list("id", "predicate")
        for p in PREDICATES
    )
    return first.union(*rest, all=True).query.sql_with_params()


@dataclass
class Attempt:
    seq: int
    owner: str
    outcome: str | None = None  # None while open
    disposition: str | None = None


@dataclass
class Item:
    """What the model says of one todo."""

    max_attempts: int
    state: State = State.PENDING
    attempt: int = 0  # the budget spent since the last human retry
    holder: str | None = None
    lease: str | None = None  # "live" | "lapsed" | None (not claimed, or paused for input)
    retry: str | None = None  # "ahead" | "due" | None
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def has_budget(self) -> bool:
        return self.attempt < self.max_attempts

    @property
    def dead_letter(self) -> bool:
        return self.state == State.FAILED and self.retry is None

    @property
    def in_flight(self) -> bool:
        return self.state in states.IN_FLIGHT_STATES

    @property
    def unfinished(self) -> bool:
        return self.state in (State.PENDING, *states.IN_FLIGHT_STATES) or (
            self.state == State.FAILED and self.retry is not None
        )

    def claimable(self, paused: bool) -> bool:
        if paused:
            return False
        return (
            self.state == State.PENDING
            or (self.state == State.CLAIMED and self.lease == "lapsed" and self.has_budget)
            or (self.state == State.FAILED and self.retry == "due" and self.has_budget)
        )

    def predicate(self, name: str) -> bool:
        return {
            "claimable": self.claimable(False),
            "in_flight": self.in_flight,
            "dead_letter": self.dead_letter,
            "unfinished": self.unfinished,
        }[name]

    def close(self, outcome: str, disposition: str) -> None:
        open_ = self.attempts[-1]
        assert open_.outcome is None
        open_.outcome, open_.disposition = outcome, disposition

    def end_hold(self) -> None:
        self.holder = None
        self.lease = None


class LifecycleMachine(RuleBasedStateMachine):
    todos = Bundle("todos")

    def __init__(self) -> None:
        super().__init__()
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        self.p: Personas = make_personas()
        self.endpoint = self.p.endpoint_a.id
        self.human = self.p.alice.id
        self.items: dict[str, Item] = {}
        self.paused = False

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self._atomic.__exit__(None, None, None)

    # --- the transitions ---------------------------------------------------------------------

    @precondition(lambda self: len(self.items) < MAX_TODOS)
    @rule(target=todos, max_attempts=st.integers(1, 3))
    def create(self, max_attempts: int) -> str:
        todo = lifecycle.create(self.endpoint, queue=QUEUE, title="t", max_attempts=max_attempts)
        # Created a second apart, oldest first, so claim_next takes them in a fixed order: in
        # one transaction now() is one instant, and their ids are random.
        set_created_at(todo.id, MAX_TODOS - len(self.items))
        self.items[todo.id] = Item(max_attempts)
        return todo.id

    def _took(self, item: Item, agent: str) -> None:
        if item.state == State.CLAIMED:  # a takeover of a lapsed lease
            item.close("lease_expired", "requeued")
        item.state, item.holder, item.lease, item.retry = State.CLAIMED, agent, "live", None
        item.attempt += 1
        item.attempts.append(Attempt(len(item.attempts) + 1, agent))

    @rule(todo=todos, agent=st.sampled_from(AGENTS))
    def claim(self, todo: str, agent: str) -> None:
        item = self.items[todo]
        expected = item.claimable(self.paused)
        try:
            result = lifecycle.claim(self.endpoint, todo, owner=agent)
        except LifecycleError:
            assert not expected, f"claim of a claimable {item}"
            return
        assert expected, f"claim took {item}"
        assert result.took_over == (item.state == State.CLAIMED)
        self._took(item, agent)
        assert result.attempt_seq == len(item.attempts)

    @rule(agent=st.sampled_from(AGENTS))
    def claim_next(self, agent: str) -> None:
        candidates = {i for i, item in self.items.items() if item.claimable(self.paused)}
        result = lifecycle.claim_next(self.endpoint, queues=[QUEUE], owner=agent)
        if result is None:
            assert not candidates, f"claim_next took nothing of {candidates}"
            return
        assert result.todo.id in candidates, f"claim_next took {result.todo.id}"
        self._took(self.items[result.todo.id], agent)

    def _holder_call(
        self, todo: str, agent: str, call: Any, replays: str | None = None, **kwargs: Any
    ) -> bool:
        """Run a holder's report; whether it was taken, checked against the model.

        A complete or fail (``replays``: the outcome it closes with) that repeats the one that
        closed the latest attempt, by the same holder, answers success and changes nothing
        (todos/sql/reported.sql): it is not taken.
        """
        item = self.items[todo]
        expected = item.state == State.CLAIMED and item.holder == agent
        last = item.attempts[-1] if item.attempts else None
        replayed = (
            not expected
            and replays is not None
            and last is not None
            and last.outcome == replays
            and last.owner == agent
        )
        try:
            call(self.endpoint, todo, owner=agent, **kwargs)
        except LifecycleError:
            assert not expected, f"{call.__name__} by its holder refused: {item}"
            assert not replayed, f"{call.__name__} repeated by its holder refused: {item}"
            return False
        assert expected or replayed, f"{call.__name__} by {agent} taken: {item}"
        return expected

    @rule(todo=todos, agent=st.sampled_from(AGENTS))
    def heartbeat(self, todo: str, agent: str) -> None:
        if self._holder_call(todo, agent, lifecycle.heartbeat):
            self.items[todo].lease = "live"

    @rule(todo=todos, agent=st.sampled_from(AGENTS))
    def complete(self, todo: str, agent: str) -> None:
        if self._holder_call(todo, agent, lifecycle.complete, replays="completed", summary="done"):
            item = self.items[todo]
            item.state = State.COMPLETED
            item.close("completed", "done")
            item.end_hold()

    @rule(todo=todos, agent=st.sampled_from(AGENTS), retryable=st.booleans())
    def fail(self, todo: str, agent: str, retryable: bool) -> None:
        item = self.items[todo]
        retries = retryable and item.has_budget
        if self._holder_call(todo, agent, lifecycle.fail, replays="failed", retryable=retryable):
            item.state = State.FAILED
            item.retry = "ahead" if retries else None
            item.close("failed", "retry_scheduled" if retries else "dead_lettered")
            item.end_hold()

    @rule(todo=todos, agent=st.sampled_from(AGENTS))
    def release(self, todo: str, agent: str) -> None:
        item = self.items[todo]
        requeued = item.has_budget
        if self._holder_call(todo, agent, lifecycle.release):
            item.state = State.PENDING if requeued else State.FAILED
            item.close("released", "requeued" if requeued else "dead_lettered")
            item.end_hold()

    @rule(todo=todos, agent=st.sampled_from(AGENTS), to=st.sampled_from(["input", "auth"]))
    def interrupt(self, todo: str, agent: str, to: str) -> None:
        state = State.INPUT_REQUIRED if to == "input" else State.AUTH_REQUIRED
        if self._holder_call(todo, agent, lifecycle.interrupt, state=state):
            item = self.items[todo]
            item.state, item.lease = state, None

    @rule(todo=todos)
    def resume(self, todo: str) -> None:
        item = self.items[todo]
        expected = item.state in states.AWAITING_INPUT_STATES
        try:
            lifecycle.resume(self.human, todo, response={"answer": "yes"})
        except LifecycleError:
            assert not expected, f"resume refused: {item}"
            return
        assert expected, f"resume taken: {item}"
        item.state, item.lease = State.CLAIMED, "live"

    @rule(todo=todos)
    def cancel(self, todo: str) -> None:
        item = self.items[todo]
        expected = item.unfinished
        try:
            lifecycle.cancel(Scope.of_human(self.human), todo, reason="model")
        except LifecycleError:
            assert not expected, f"cancel refused: {item}"
            return
        assert expected, f"cancel taken: {item}"
        if item.in_flight:
            item.close("canceled", "canceled")
        item.state, item.retry = State.CANCELED, None
        item.end_hold()

    @rule(todo=todos)
    def retry(self, todo: str) -> None:
        item = self.items[todo]
        expected = item.state in states.RETRYABLE_STATES
        try:
            lifecycle.retry(self.human, todo)
        except LifecycleError:
            assert not expected, f"retry refused: {item}"
            return
        assert expected, f"retry taken: {item}"
        item.state, item.attempt, item.retry = State.PENDING, 0, None

    @rule()
    def pause_or_resume_queue(self) -> None:
        if self.paused:
            lifecycle.resume_queue(self.endpoint, QUEUE, human_id=self.human)
        else:
            lifecycle.pause_queue(self.endpoint, QUEUE, human_id=self.human)
        self.paused = not self.paused

    # --- the clock and the sweeper ---------------------------------------------------------------

    @precondition(lambda self: any(i.lease == "live" for i in self.items.values()))
    @rule(data=st.data())
    def a_lease_lapses(self, data: st.DataObject) -> None:
        live = [i for i, item in self.items.items() if item.lease == "live"]
        todo = data.draw(st.sampled_from(live))
        assert expire_lease(todo) == 1
        self.items[todo].lease = "lapsed"

    @precondition(lambda self: any(i.retry == "ahead" for i in self.items.values()))
    @rule(data=st.data())
    def a_retry_comes_due(self, data: st.DataObject) -> None:
        ahead = [i for i, item in self.items.items() if item.retry == "ahead"]
        todo = data.draw(st.sampled_from(ahead))
        fetch_all(
            "UPDATE todos SET next_retry_at = now() - interval '1 second' WHERE id = %(id)s",
            {"id": todo},
        )
        self.items[todo].retry = "due"

    @rule()
    def reap(self) -> None:
        result = lifecycle.reap()
        lapsed = {
            i
            for i, item in self.items.items()
            if item.state == State.CLAIMED and item.lease == "lapsed"
        }
        assert set(result.requeued) | set(result.dead_lettered) == lapsed
        for todo in lapsed:
            item = self.items[todo]
            requeued = item.has_budget
            assert (todo in result.requeued) == requeued
            item.state = State.PENDING if requeued else State.FAILED
            item.close("reaped", "requeued" if requeued else "dead_lettered")
            item.end_hold()

    @rule()
    def requeue_due_retries(self) -> None:
        due = {
            i
            for i, item in self.items.items()
            if item.state == State.FAILED and item.retry == "due"
        }
        assert set(lifecycle.requeue_due_retries()) == due
        for todo in due:
            self.items[todo].state, self.items[todo].retry = State.PENDING, None

    # --- the database equals the model -----------------------------------------------------------

    @invariant()
    def check(self) -> None:
        if not self.items:
            return
        ids = list(self.items)
        rows = {r["id"]: r for r in fetch_all(ROWS_SQL, {"ids": ids})}
        attempts: dict[str, list[tuple[Any, ...]]] = {i: [] for i in ids}
        for a in fetch_all(
            "SELECT todo_id, seq, owner, outcome, disposition, ended_at IS NULL AS open"
            " FROM todo_attempts WHERE todo_id = ANY(%(ids)s) ORDER BY todo_id, seq",
            {"ids": ids},
        ):
            assert a["open"] == (a["outcome"] is None), a
            attempts[a["todo_id"]].append((a["seq"], a["owner"], a["outcome"], a["disposition"]))
        loaded = {i: Todo.from_db(DB, FIELDS, [r[c] for c in COLUMNS]) for i, r in rows.items()}
        orm: dict[str, set[str]] = {p: set() for p in PREDICATES}
        for r in fetch_all(*orm_forms()):
            orm[r["predicate"]].add(r["id"])
        for todo_id, item in self.items.items():
            row = rows[todo_id]
            try:
                self._check_todo(item, loaded[todo_id], row, attempts[todo_id], orm)
            except AssertionError as error:
                shown = {k: row[k] for k in SHOWN}
                raise AssertionError(f"{todo_id}: model {item}, row {shown}") from error

    @staticmethod
    def _check_todo(
        item: Item,
        todo: Todo,
        row: dict[str, Any],
        attempts: list[tuple[Any, ...]],
        orm: dict[str, set[str]],
    ) -> None:
        assert row["state"] == item.state.value
        assert row["attempt"] == item.attempt
        assert row["attempts_total"] == len(item.attempts)
        assert row["owner"] == item.holder
        if item.lease is None:
            assert row["lease_expires_at"] is None
        else:
            assert row["live"] == (item.lease == "live")
        if item.retry is None:
            assert row["next_retry_at"] is None
        else:
            assert row["due"] == (item.retry == "due")
        assert attempts == [(a.seq, a.owner, a.outcome, a.disposition) for a in item.attempts]
        assert sum(a.outcome is None for a in item.attempts) == (1 if item.in_flight else 0)
        now = row["db_now"]
        python = {
            "claimable": lambda t: states.is_claimable(t, now),
            "in_flight": states.is_in_flight,
            "dead_letter": states.is_dead_letter,
            "unfinished": states.is_unfinished,
        }
        for predicate in PREDICATES:
            model = item.predicate(predicate)
            check = python[predicate]
            assert check(todo) == model, predicate
            assert check(TodoView.from_row(row)) == model, predicate
            assert (todo.id in orm[predicate]) == model, predicate
            assert row[f"sql_{predicate}"] == model, predicate


def test_the_lifecycle_matches_its_model() -> None:
    run_state_machine_as_test(
        LifecycleMachine,
        settings=settings(
            max_examples=20,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            derandomize=True,
        ),
    )
