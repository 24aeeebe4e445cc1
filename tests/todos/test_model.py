"""A model of the lifecycle: Hypothesis drives the real transitions against a plain-Python model.

The model (``Item``, one per todo) is the lifecycle written out as small Python: its state, the
attempts it spent and may spend, its holder, its lease (live or lapsed), its retry (none, ahead,
due), its deadlines (start_by and finish_by unset, ahead or past; a run timeout and whether the
current claim ran past it) and its attempts with how each ended; per queue whether it is paused.
Every rule calls the real lifecycle (create with or without deadlines, claim by id and claim_next,
heartbeat, complete, fail, release, interrupt and resume, apart and as a holder's question answered
at once, cancel and retry by the owning human, pause and resume of the queue, the deadline sweep,
the reaper and the retry requeue), asks the model what must happen (taken or refused, how a refusal
reads, and the state after), and after every step ``check`` compares the whole database with the
model: each todo's row, its attempt rows (exactly one open attempt while it is held, each closed
once with the outcome, disposition and summary the model says), every lease within its caps, and
the state predicates in all three forms (Python on the loaded row, the ORM filter, the SQL fragment
the statements splice in) with each other and with the model.

Deadlines (docs/decisions/0027-time-and-cancellation.md): no claim takes a todo past its
finish_by, nor a pending one past its start_by before its first claim; the deadline sweep
dead-letters the first (an open attempt closing ``timed_out/dead_lettered``, summary
``finish_by``) and the second; the reaper leaves a todo past finish_by to it, and retries a run
past its run timeout as a failure (``timed_out/retry_scheduled``, or ``dead_lettered`` with no
budget left); a takeover of such a run closes it ``timed_out/requeued``; no lease (claim,
heartbeat, resume) runs past finish_by or claimed_at + the run timeout, and a live one is
exactly the earliest of those and its TTL; the holder whose claim a deadline or a cancel ended
is told so (``TodoEnded``: code, reason, who), anyone else gets a conflict. Every example starts
from three todos with every deadline set, two of them held by an agent each, and time passing
and the sweeper are one rule, so that a run of 20 examples reaches them.

Time: each example runs in a transaction of its own, rolled back at its end, and PostgreSQL's
``now()`` is one instant in it, so "the clock moves" is a rule that moves a lease, a retry or a
deadline into the past on the row (``tests/reach.py``), as the other lifecycle tests do; a lease
capped by a deadline lapses with it, and a run times out by moving its claim's ``claimed_at``
back. Django's ``Now()``, which the ORM forms read, is the statement's time instead: it runs on
with the example, never as far as a lease or a deadline (however long Hypothesis takes to shrink
a failure, which it would if the examples shared the test's transaction).

Replayable: Hypothesis replays an example's choices to shrink a failure, so every choice the
machine offers is listed in the order the todos were created (their ids are random), and
claim_next takes them in that order too (each created a second before the next).

Not modelled: ``not_before``, priorities and dedupe keys (``tests/todos/test_time.py``), a
queue's default run timeout and its limits (``tests/todos/test_queue_limits.py``), cost caps,
fences and concurrency (``tests/concurrency/``).
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import transaction
from django.db.models import Value
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    MultipleResults,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from switchboard.lib.actors import Actor
from switchboard.lib.errors import LifecycleError, TodoEnded
from switchboard.lib.sql import fetch_all, load
from switchboard.scope import Scope
from tests.base import Personas, make_personas
from tests.reach import expire_lease, make_retry_due, set_created_at
from todos import lifecycle, states
from todos.limits import RUN_TIMEOUT_MAX_SECONDS, RUN_TIMEOUT_MIN_SECONDS
from todos.models import Todo
from todos.states import State
from todos.types import TodoView

# Transactional, so that each example's atomic block is a transaction of its own (not a
# savepoint in the test's), and now() is that example's start.
pytestmark = pytest.mark.django_db(transaction=True)

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
    " t.next_retry_at <= now() AS due, t.start_by <= now() AS start_by_past,"
    " t.finish_by <= now() AS finish_by_past, "
    + ", ".join(f"({load(lifecycle.statements.SQL_DIR, '_' + p)}) AS sql_{p}" for p in PREDICATES)
    + " FROM todos t WHERE t.id = ANY(%(ids)s)"
)
# The rows read, loaded as the ORM loads a row (Model.from_db), for the Python forms on a
# model instance.
DB = "default"
FIELDS = [f.attname for f in Todo._meta.concrete_fields]
COLUMNS = [f.column for f in Todo._meta.concrete_fields]
SHOWN = ("state", "attempt", "owner", "lease_expires_at", "next_retry_at", "claimed_at")
# How far ahead a new todo's start_by, finish_by and run timeout reach, in seconds: around the
# claims' lease TTL (300 s by default), so that they cap some leases and not others, and at
# least two minutes, so that none passes for the ORM forms (Django's Now(), the statement's
# time) while an example runs. Within check_time's bounds (todos/limits.py).
AHEAD = (120, 600)
assert AHEAD[0] >= RUN_TIMEOUT_MIN_SECONDS and AHEAD[1] <= RUN_TIMEOUT_MAX_SECONDS
SWEEPER = str(Actor.sweeper())
# What closes a holder's attempt for it, so that its next call is told (TodoEnded), not refused.
ENDED_BY_OTHERS = ("canceled", "timed_out")
# A pass of the sweeper: its deadline, reap and retry steps in the order todos/sweeps.py runs them.
SWEEP_PASS = ("deadlines", "reap", "requeue")
SWEEPS = [SWEEP_PASS, ("deadlines",), ("reap",), ("requeue",), ()]
# What the holder whose claim the sweeper just ended does next (the rules of those names).
NEXT_CALLS = ("heartbeat", "complete", "release")

# The clock, per deadline: moved a second into the past on the row (the database's now() does
# not move in the test's transaction). A lease never runs past a deadline, so one it capped
# lapses with it; finish_by drags start_by along (the schema's CHECK: start_by <= finish_by).
# A run times out by moving its claim's claimed_at back, on the todo and its open attempt (the
# reaper reads the first, a takeover the second).
PASS_DEADLINE = {
    "start_by": "UPDATE todos SET start_by = now() - interval '1 second' WHERE id = %(id)s",
    "finish_by": """
        UPDATE todos
           SET finish_by = now() - interval '1 second',
               start_by = CASE WHEN start_by IS NOT NULL
                               THEN LEAST(start_by, now() - interval '1 second') END,
               lease_expires_at = CASE WHEN lease_expires_at IS NOT NULL
                                       THEN LEAST(lease_expires_at, now() - interval '1 second') END
         WHERE id = %(id)s""",
    "run_timeout": """
        WITH t AS (
            UPDATE todos
               SET claimed_at = now() - (run_timeout_seconds + 1) * interval '1 second',
                   lease_expires_at = CASE WHEN lease_expires_at IS NOT NULL
                                           THEN LEAST(lease_expires_at, now() - interval '1 second')
                                      END
             WHERE id = %(id)s
            RETURNING id, attempts_total, claimed_at)
        UPDATE todo_attempts a SET claimed_at = t.claimed_at
          FROM t WHERE a.todo_id = t.id AND a.seq = t.attempts_total AND a.ended_at IS NULL""",
}


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


def new_todo(timed: bool = False) -> st.SearchStrategy[tuple[int, dict[str, int | None]]]:
    """A new todo's max_attempts and deadlines (``timed``: every one set)."""
    return st.tuples(st.integers(1, 3), deadlines(timed))


@st.composite
def deadlines(draw: st.DrawFn, timed: bool) -> dict[str, int | None]:
    """A new todo's deadlines as check_time (todos/limits.py) accepts them, each set or not:
    start_by and finish_by in seconds ahead, start_by not after finish_by, and a run timeout."""
    ahead = st.integers(*AHEAD)
    maybe = ahead if timed else ahead | st.none()
    finish = draw(maybe)
    start_ahead = st.integers(AHEAD[0], finish or AHEAD[1])
    start = draw(start_ahead if timed else start_ahead | st.none())
    run = draw(maybe)
    return {"start_by": start, "finish_by": finish, "run_timeout_seconds": run}


@dataclass
class Attempt:
    seq: int
    owner: str
    outcome: str | None = None  # None while open
    disposition: str | None = None
    summary: str | None = None
    by: str | None = None  # who ended it, when someone other than its holder did
    # Interrupted and resumed while open: read by no rule, shown in a failing example's model
    # (an answered attempt's ending is what ended.sql once named wrongly).
    answered: bool = False


@dataclass
class Item:
    """What the model says of one todo."""

    max_attempts: int
    start_by: str | None = None  # "ahead" | "past" | None (unset)
    finish_by: str | None = None  # "ahead" | "past" | None (unset)
    run_timeout: int | None = None  # seconds
    state: State = State.PENDING
    attempt: int = 0  # the budget spent since the last human retry
    holder: str | None = None
    lease: str | None = None  # "live" | "lapsed" | None (not claimed, or paused for input)
    retry: str | None = None  # "ahead" | "due" | None
    run_out: bool = False  # the current claim ran past its run timeout
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def has_budget(self) -> bool:
        return self.attempt < self.max_attempts

    @property
    def start_gated(self) -> bool:
        """Past its start_by before its first claim: start_by bounds the first claim only."""
        return self.start_by == "past" and not self.attempts

    @property
    def capped(self) -> bool:
        """A lease written now would already have lapsed: finish_by or the run timeout passed."""
        return self.finish_by == "past" or self.run_out

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
        if paused or self.finish_by == "past":
            return False
        return (
            (self.state == State.PENDING and not self.start_gated)
            or (self.state == State.CLAIMED and self.lease == "lapsed" and self.has_budget)
            or (self.state == State.FAILED and self.retry == "due" and self.has_budget)
        )

    def late(self) -> str | None:
        """Which deadline the deadline sweep dead-letters it for, if any."""
        if self.finish_by == "past" and self.unfinished:
            return "finish_by"
        if self.state == State.PENDING and self.start_gated:
            return "start_by"
        return None

    def deadlines_ahead(self) -> list[str]:
        """The deadlines the clock may move past (start_by whether or not it was claimed: it
        bounds the first claim only, so one claimed in time stays claimable past it)."""
        ahead = []
        if self.run_timeout is not None and self.in_flight and not self.run_out:
            ahead.append("run_timeout")
        if self.start_by == "ahead":
            ahead.append("start_by")  # before finish_by, as it falls
        if self.finish_by == "ahead":
            ahead.append("finish_by")
        return ahead

    def predicate(self, name: str) -> bool:
        return {
            "claimable": self.claimable(False),
            "in_flight": self.in_flight,
            "dead_letter": self.dead_letter,
            "unfinished": self.unfinished,
        }[name]

    def close(
        self, outcome: str, disposition: str, summary: str | None = None, by: str | None = None
    ) -> None:
        open_ = self.attempts[-1]
        assert open_.outcome is None
        open_.outcome, open_.disposition = outcome, disposition
        open_.summary, open_.by = summary, by

    def end_hold(self) -> None:
        self.holder = None
        self.lease = None
        self.run_out = False


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

    @initialize(target=todos, first=st.lists(new_todo(timed=True), min_size=3, max_size=3))
    def create_first(self, first: list[tuple[int, dict[str, int | None]]]) -> MultipleResults[str]:
        """Three todos from the start, so that every rule has one to act on, each with every
        deadline set: two claimed, an agent each, so that their deadlines have holders to end,
        and one waiting, for its start_by."""
        ids = [self._create(new) for new in first]
        for todo, agent in zip(ids, AGENTS, strict=False):
            self.claim(todo, agent)
        return multiple(*ids)

    @precondition(lambda self: len(self.items) < MAX_TODOS)
    @rule(target=todos, new=new_todo())
    def create(self, new: tuple[int, dict[str, int | None]]) -> str:
        return self._create(new)

    def _create(self, new: tuple[int, dict[str, int | None]]) -> str:
        max_attempts, time = new
        now = timezone.now()
        at = {
            name: None if ahead is None else now + dt.timedelta(seconds=ahead)
            for name, ahead in time.items()
            if name != "run_timeout_seconds"
        }
        todo = lifecycle.create(
            self.endpoint,
            queue=QUEUE,
            title="t",
            max_attempts=max_attempts,
            start_by=at["start_by"],
            finish_by=at["finish_by"],
            run_timeout_seconds=time["run_timeout_seconds"],
        )
        # Created a second apart, oldest first, so claim_next takes them in a fixed order: in
        # one transaction now() is one instant, and their ids are random.
        set_created_at(todo.id, MAX_TODOS - len(self.items))
        self.items[todo.id] = Item(
            max_attempts,
            start_by=None if at["start_by"] is None else "ahead",
            finish_by=None if at["finish_by"] is None else "ahead",
            run_timeout=time["run_timeout_seconds"],
        )
        return todo.id

    def _took(self, item: Item, agent: str) -> None:
        if item.state == State.CLAIMED:  # a takeover of a lapsed lease, timed out or not
            if item.run_out:
                item.close("timed_out", "requeued", "run_timeout")
            else:
                item.close("lease_expired", "requeued")
        item.state, item.holder, item.lease, item.retry = State.CLAIMED, agent, "live", None
        item.run_out = False
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
        (todos/sql/reported.sql): it is not taken. A call by the holder whose latest attempt
        someone else ended (a cancel, a deadline) is told how (``TodoEnded``, todos/sql/
        ended.sql); any other refusal is a plain conflict.
        """
        item = self.items[todo]
        expected = item.state == State.CLAIMED and item.holder == agent
        last = item.attempts[-1] if item.attempts else None
        mine = last if not expected and last is not None and last.owner == agent else None
        replayed = mine is not None and replays is not None and mine.outcome == replays
        ended = mine if mine is not None and mine.outcome in ENDED_BY_OTHERS else None
        name = call.__name__
        try:
            call(self.endpoint, todo, owner=agent, **kwargs)
        except LifecycleError as error:
            refused: LifecycleError | None = error
        else:
            refused = None
        if refused is None:
            assert expected or replayed, f"{name} by {agent} taken: {item}"
            return expected
        assert not expected, f"{name} by its holder refused: {item}"
        assert not replayed, f"{name} repeated by its holder refused: {item}"
        if ended is None:
            assert not isinstance(refused, TodoEnded), f"{name} by {agent}: {refused!r}, {item}"
            return False
        assert isinstance(refused, TodoEnded), f"{name} by {agent}: {refused!r}, {item}"
        assert (refused.code, refused.reason) == (ended.outcome, ended.summary), item
        assert refused.by == ended.by, (refused.by, item)
        return False

    @rule(todo=todos, agent=st.sampled_from(AGENTS))
    def heartbeat(self, todo: str, agent: str) -> None:
        if self._holder_call(todo, agent, lifecycle.heartbeat):
            item = self.items[todo]
            item.lease = "lapsed" if item.capped else "live"

    @rule(todo=todos, agent=st.sampled_from(AGENTS))
    def complete(self, todo: str, agent: str) -> None:
        if self._holder_call(todo, agent, lifecycle.complete, replays="completed", summary="done"):
            item = self.items[todo]
            item.state = State.COMPLETED
            item.close("completed", "done", "done")
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
        # The wait for input counts against the run timeout: a resume past it (or past
        # finish_by) gives a lease already lapsed.
        item.state, item.lease = State.CLAIMED, "lapsed" if item.capped else "live"
        item.attempts[-1].answered = True

    @precondition(lambda self: any(i.lease == "live" for i in self.items.values()))
    @rule(data=st.data())
    def the_holder_asks_and_is_answered(self, data: st.DataObject) -> None:
        """A live claim's holder asks a question and the owning human answers it at once: the
        attempt then carries an answer, whose activity row must not be read as its ending
        (ended.sql) when a deadline or the reaper ends the run later; and the wait may take
        the run's time. As separate rules the question, its answer and the run's timeout
        rarely meet in an example."""
        live = [t for t, item in self.items.items() if item.lease == "live"]
        todo = data.draw(st.sampled_from(live))
        holder = self.items[todo].holder
        assert holder is not None
        self.interrupt(todo, holder, "input")
        self.resume(todo)
        item = self.items[todo]
        if "run_timeout" in item.deadlines_ahead() and data.draw(st.booleans()):
            self._move(todo, "run_timeout")  # the wait for the answer took the run's time

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
            item.close("canceled", "canceled", "model", str(Actor.human(self.human)))
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

    @rule(pause=st.booleans())
    def pause_or_resume_queue(self, pause: bool) -> None:
        change = lifecycle.pause_queue if pause else lifecycle.resume_queue
        # Pausing a paused queue, or resuming one that is not, changes nothing.
        assert change(self.endpoint, QUEUE, human_id=self.human).changed == (pause != self.paused)
        self.paused = pause

    # --- the clock and the sweeper ---------------------------------------------------------------

    def _clock(self) -> dict[str, list[str]]:
        """What the clock may move past, todo by todo, held todos first (their deadlines end a
        claim): a live lease, a retry ahead, a deadline ahead (``Item.deadlines_ahead``)."""
        moves = {}
        for todo, item in sorted(self.items.items(), key=lambda i: not i[1].in_flight):
            ahead = ["lease"] if item.lease == "live" else []
            ahead += ["retry"] if item.retry == "ahead" else []
            ahead += item.deadlines_ahead()
            if ahead:
                moves[todo] = ahead
        return moves

    # Named to come first: Hypothesis lists the rules with the fewest arguments first, by name,
    # and draws the first ones most often; time passing is what every deadline needs.
    @rule(data=st.data())
    def a_moment_passes(self, data: st.DataObject) -> None:
        """Time passes: the clock moves past one thing of one todo (``_clock``), or nothing;
        then the sweeper runs one of its steps, a whole pass (``SWEEPS``), or nothing."""
        moves = self._clock()
        todo = data.draw(st.sampled_from([*moves, None]))
        if todo is not None:
            # Each of its moves as likely (sampled_from favours the first).
            self._move(todo, data.draw(st.permutations(moves[todo]))[0])
        self._sweep(data.draw(st.sampled_from(SWEEPS)), data)

    def _move(self, todo: str, what: str) -> None:
        item = self.items[todo]
        if what == "lease":
            assert expire_lease(todo) == 1
            item.lease = "lapsed"
        elif what == "retry":
            make_retry_due(todo)
            item.retry = "due"
        else:
            moved = fetch_all(PASS_DEADLINE[what] + " RETURNING 1", {"id": todo})
            assert len(moved) == 1
            if what == "run_timeout":
                item.run_out = True
            else:
                item.finish_by = "past" if what == "finish_by" else item.finish_by
                item.start_by = "past" if item.start_by is not None else None
            # A lease is capped by finish_by and the run timeout, never by start_by (it bounds
            # the first claim, not a run), so only those two lapse one.
            if item.lease is not None and what != "start_by":
                item.lease = "lapsed"

    def _sweep(self, steps: tuple[str, ...], data: st.DataObject) -> None:
        """Run the sweeper's ``steps``. A holder whose claim they ended makes its next call at
        once: told how its claim ended when the sweeper timed it out, refused when its lease
        was reaped."""
        ended: list[tuple[str, str]] = []
        for step in steps:
            ended += getattr(self, f"_{step}")()
        for todo, holder in ended:
            getattr(self, data.draw(st.sampled_from(NEXT_CALLS)))(todo, holder)

    def _deadlines(self) -> list[tuple[str, str]]:
        late = {i: reason for i, item in self.items.items() if (reason := item.late())}
        assert set(lifecycle.dead_letter_late()) == set(late)
        ended = []
        for todo, reason in late.items():
            item = self.items[todo]
            if item.in_flight:
                assert item.holder is not None
                ended.append((todo, item.holder))
                item.close("timed_out", "dead_lettered", reason, SWEEPER)
            item.state, item.retry = State.FAILED, None
            item.end_hold()
        return ended

    def _reap(self) -> list[tuple[str, str]]:
        result = lifecycle.reap()
        # A todo past its finish_by is the deadline sweep's, never the reaper's.
        lapsed = [
            i
            for i, item in self.items.items()
            if item.state == State.CLAIMED and item.lease == "lapsed" and item.finish_by != "past"
        ]
        reaped = (result.requeued, result.dead_lettered, result.retry_scheduled)
        assert set().union(*reaped) == set(lapsed)
        ended = []
        for todo in lapsed:
            item = self.items[todo]
            assert item.holder is not None
            ended.append((todo, item.holder))
            budget = item.has_budget
            if item.run_out:  # a timed-out run is retried as a failure is
                assert (todo in result.retry_scheduled) == budget
                item.state, item.retry = State.FAILED, "ahead" if budget else None
                disposition = "retry_scheduled" if budget else "dead_lettered"
                item.close("timed_out", disposition, "run_timeout", SWEEPER)
            else:
                assert (todo in result.requeued) == budget
                item.state = State.PENDING if budget else State.FAILED
                item.close("reaped", "requeued" if budget else "dead_lettered")
            item.end_hold()
        return ended

    def _requeue(self) -> list[tuple[str, str]]:
        due = {
            i
            for i, item in self.items.items()
            if item.state == State.FAILED and item.retry == "due"
        }
        assert set(lifecycle.requeue_due_retries()) == due
        for todo in due:
            self.items[todo].state, self.items[todo].retry = State.PENDING, None
        return []

    # --- the database equals the model -----------------------------------------------------------

    @invariant()
    def check(self) -> None:
        if not self.items:
            return
        ids = list(self.items)
        rows = {r["id"]: r for r in fetch_all(ROWS_SQL, {"ids": ids})}
        attempts: dict[str, list[tuple[Any, ...]]] = {i: [] for i in ids}
        for a in fetch_all(
            "SELECT todo_id, seq, owner, outcome, disposition, summary, ended_at IS NULL AS open"
            " FROM todo_attempts WHERE todo_id = ANY(%(ids)s) ORDER BY todo_id, seq",
            {"ids": ids},
        ):
            assert a["open"] == (a["outcome"] is None), a
            attempts[a["todo_id"]].append(
                (a["seq"], a["owner"], a["outcome"], a["disposition"], a["summary"])
            )
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
        for deadline in ("start_by", "finish_by"):
            model = getattr(item, deadline)
            if model is None:
                assert row[deadline] is None, deadline
            else:
                assert row[f"{deadline}_past"] == (model == "past"), deadline
        assert row["run_timeout_seconds"] == item.run_timeout
        _check_lease(item, todo, row)
        assert attempts == [
            (a.seq, a.owner, a.outcome, a.disposition, a.summary) for a in item.attempts
        ]
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


def _check_lease(item: Item, todo: Todo, row: dict[str, Any]) -> None:
    """The run's deadline (states.run_deadline: finish_by, claimed_at + run timeout) is past
    exactly when the model says, no lease runs past it, and a live lease is exactly the
    earliest of it and the claim's TTL (todos/sql/_lease_cap.sql)."""
    now = row["db_now"]
    if item.in_flight and item.run_timeout is not None:
        assert todo.claimed_at is not None
        run_ends = todo.claimed_at + dt.timedelta(seconds=item.run_timeout)
        assert (run_ends <= now) == item.run_out, "run_out"
    deadline = states.run_deadline(todo)
    lease = row["lease_expires_at"]
    if lease is None or deadline is None:
        return
    assert lease <= deadline, "lease past the run's deadline"
    if item.lease == "live":
        assert lease == min(now + dt.timedelta(seconds=row["lease_ttl_seconds"]), deadline)


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
