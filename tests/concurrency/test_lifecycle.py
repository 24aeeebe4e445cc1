"""Race tests of the lifecycle (the concurrency argument in ``todos/lifecycle/core.py``).

Every test here commits for real (``transaction=True``) and runs its actors in threads, each on
its own Django connection, closed when the thread ends (``Crew``, tests/concurrency/harness.py).
Leases are expired by setting ``todos.lease_expires_at`` in the past with SQL
(``tests.reach.expire_lease``): PostgreSQL's ``now()`` does not follow Python's clock, and the
shortest lease a claim may ask for is ten seconds.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import pytest
from django.db import connection, transaction

from switchboard.lib.errors import LeaseConflict
from switchboard.lib.sql import fetch_all, fetch_one
from switchboard.scope import Scope
from tests.base import Personas
from tests.concurrency.harness import (
    Crew,
    backend_activity,
    backend_pid,
    behind_this_transaction,
)
from tests.reach import expire_lease, lapsed
from tests.rows import attempt_rows, todo_row
from todos import lifecycle
from todos.types import ClaimResult, FailResult, ReportResult, RevokeResult, SweepResult

TTL = lifecycle.LEASE_TTL_MIN_SECONDS
DIED = ("lease_expired", "reaped")
UNFINISHED_SQL = """
    SELECT count(*) AS n FROM todos
     WHERE endpoint_id = %(endpoint_id)s
       AND NOT (state = 'completed' OR (state = 'failed' AND next_retry_at IS NULL))
"""


# --- 1. the whole lifecycle under eight workers, a reaper and a checker -------------------------

WORKERS = 8
TODOS = 500
MAX_ATTEMPTS = 4
QUEUES = ("races-a", "races-b")
QUEUE_CHOICES: tuple[list[str], ...] = (["races-a"], ["races-b"], ["races-a", "races-b"])
HELD_MAX = 3
RUN_DEADLINE_SECONDS = 120.0
RUN_BUDGET_SECONDS = 60.0


@dataclass
class Handle:
    """A claim as its worker holds it."""

    todo_id: str
    seq: int
    token: str | None
    renewed: float  # monotonic time of the claim or the last heartbeat
    lapsed: bool = False  # the worker expired its own lease (a stall) and may have lost it
    parked_until: float = 0.0

    @property
    def key(self) -> tuple[str, int]:
        return (self.todo_id, self.seq)


@dataclass
class Ledger:
    """What the actors saw, to compare with the rows when the run is over."""

    crew: Crew
    endpoint_id: UUID
    ids: list[str]
    lock: threading.Lock = field(default_factory=threading.Lock)
    opened: dict[tuple[str, int], str] = field(default_factory=dict)  # → owner
    closed: dict[tuple[str, int], str] = field(default_factory=dict)  # → outcome
    reaped: Counter[str] = field(default_factory=Counter)
    must_have_died: set[tuple[str, int]] = field(default_factory=set)
    unfinished: set[str] = field(default_factory=set)
    stats: Counter[str] = field(default_factory=Counter)

    def count(self, what: str, n: int = 1) -> None:
        with self.lock:
            self.stats[what] += n

    def open(self, key: tuple[str, int], owner: str) -> None:
        with self.lock:
            if key in self.opened:
                self.crew.problem(f"attempt {key} opened twice ({self.opened[key]}, {owner})")
            self.opened[key] = owner

    def close(self, key: tuple[str, int], outcome: str) -> None:
        with self.lock:
            if key in self.closed:
                self.crew.problem(f"attempt {key} closed twice ({self.closed[key]}, {outcome})")
            self.closed[key] = outcome

    def died(self, key: tuple[str, int]) -> None:
        with self.lock:
            self.must_have_died.add(key)

    def finished(self, todo_id: str) -> None:
        with self.lock:
            self.unfinished.discard(todo_id)


class Worker:
    """An agent draining the queues under its own owner string, misbehaving now and then."""

    def __init__(
        self,
        n: int,
        ledger: Ledger,
        abandoned: queue.SimpleQueue[tuple[str, int]],
        stop: threading.Event,
        seed: int,
    ) -> None:
        self.owner = f"worker-{n}"
        self.ledger = ledger
        self.abandoned = abandoned
        self.stop = stop
        self.rng = random.Random(seed)
        self.held: dict[str, Handle] = {}

    def run(self) -> None:
        while not self.stop.is_set():
            now = time.monotonic()
            ready = [h for h in self.held.values() if h.parked_until <= now]
            if ready and (len(self.held) >= HELD_MAX or self.rng.random() < 0.7):
                self.act(self.rng.choice(ready))
            elif len(self.held) < HELD_MAX:
                self.claim()
            else:
                time.sleep(0.005)

    def claim(self) -> None:
        ledger, rng = self.ledger, self.rng
        fenced = rng.random() < 0.5
        by_id = rng.random() < 0.2
        kw: dict[str, Any] = {
            "owner": self.owner,
            "lease_ttl_seconds": TTL,
            "require_fence": fenced,
            "claimant": f"races/{self.owner}",
        }
        result: ClaimResult | None
        if by_id:
            todo_id = rng.choice(ledger.ids)
            with ledger.lock:
                if todo_id not in ledger.unfinished:
                    return
            try:
                result = lifecycle.claim(ledger.endpoint_id, todo_id, **kw)
            except LeaseConflict:
                ledger.count("claim_by_id_conflicts")  # not claimable now: expected
                return
            ledger.count("claims_by_id")
        else:
            result = lifecycle.claim_next(ledger.endpoint_id, rng.choice(QUEUE_CHOICES), **kw)
            if result is None:
                ledger.count("empty_claims")
                time.sleep(rng.uniform(0.002, 0.01))
                return
        self.claimed(result, fenced)

    def claimed(self, result: ClaimResult, fenced: bool) -> None:
        ledger = self.ledger
        todo, seq = result.todo, result.attempt_seq
        key = (todo.id, seq)
        if (todo.owner, todo.state) != (self.owner, "claimed") or not (
            seq == result.attempts_total == todo.attempts_total
        ):
            self.ledger.crew.problem(f"{self.owner}: claim {key} returned {result!r}")
        if fenced != (result.lease_token is not None):
            self.ledger.crew.problem(f"{self.owner}: claim {key} fenced={fenced}, token wrong")
        ledger.open(key, self.owner)
        ledger.count("fenced_claims" if fenced else "unfenced_claims")
        if result.took_over:
            ledger.count("takeovers")
            prior = result.prior_attempts[0] if result.prior_attempts else None
            if prior is None or prior.seq != seq - 1 or prior.outcome != "lease_expired":
                self.ledger.crew.problem(f"{self.owner}: takeover {key} reports prior {prior!r}")
            else:
                ledger.close((todo.id, prior.seq), "lease_expired")
        stale = self.held.pop(todo.id, None)
        if stale is not None:
            # Only a lapsed lease of ours can be claimed again: that attempt must have died.
            ledger.died(stale.key)
            ledger.count("reclaimed_own_lapsed")
        self.held[todo.id] = Handle(todo.id, seq, result.lease_token, time.monotonic())

    def act(self, h: Handle) -> None:
        ledger, rng, endpoint_id = self.ledger, self.rng, self.ledger.endpoint_id
        holder: dict[str, Any] = {"owner": self.owner, "lease_token": h.token}
        r = rng.random()
        out: ReportResult | FailResult
        try:
            if r < 0.12:
                beat = lifecycle.heartbeat(endpoint_id, h.todo_id, lease_ttl_seconds=TTL, **holder)
                if beat.attempt_seq != h.seq or beat.todo.owner != self.owner:
                    ledger.crew.problem(f"{self.owner}: heartbeat on {h.key} hit {beat!r}")
                h.renewed, h.lapsed = time.monotonic(), False
                ledger.count("heartbeats")
                return
            if r < 0.19:  # crash: walk away; the expirer lapses the lease
                del self.held[h.todo_id]
                ledger.died(h.key)
                self.abandoned.put(h.key)
                ledger.count("crashes")
                return
            if r < 0.25:  # stall past the lease, then carry on as if nothing happened
                if expire_lease(h.todo_id, attempt=h.seq) != 1:
                    if not h.lapsed:  # only a lease already lapsed can have been lost
                        ledger.crew.problem(f"{self.owner}: could not lapse its live {h.key}")
                    del self.held[h.todo_id]
                    ledger.died(h.key)
                    return
                h.lapsed, h.parked_until = True, time.monotonic() + rng.uniform(0.02, 0.2)
                ledger.count("stalls")
                return
            if r < 0.62:
                out = lifecycle.complete(endpoint_id, h.todo_id, result={"ok": True}, **holder)
                outcome, terminal = "completed", True
            elif r < 0.90:
                retryable = r < 0.86
                failed = lifecycle.fail(
                    endpoint_id,
                    h.todo_id,
                    retryable=retryable,
                    retry_after_seconds=1,
                    summary=f"{self.owner} failed",
                    **holder,
                )
                budget_left = failed.todo.attempt < failed.todo.max_attempts
                if failed.dead_letter == (retryable and budget_left):
                    ledger.crew.problem(f"{self.owner}: fail on {h.key} returned {failed!r}")
                out, outcome, terminal = failed, "failed", failed.dead_letter
            else:
                out = lifecycle.release(endpoint_id, h.todo_id, **holder)
                # A release spends its attempt: the last allowed one dead-letters (0012).
                spent = out.todo.attempt >= out.todo.max_attempts
                if out.todo.dead_letter != spent:
                    ledger.crew.problem(f"{self.owner}: release on {h.key} returned {out!r}")
                outcome, terminal = "released", out.todo.dead_letter
        except LeaseConflict as exc:
            del self.held[h.todo_id]
            if h.lapsed or time.monotonic() - h.renewed >= TTL - 1:
                ledger.died(h.key)  # checked against the rows at the end
                ledger.count("expected_conflicts")
            else:
                ledger.crew.problem(f"{self.owner} lost {h.key} with a live lease: {exc}")
            return
        del self.held[h.todo_id]
        if out.attempt_seq != h.seq:
            ledger.crew.problem(
                f"{self.owner}: {outcome} on {h.key} closed attempt {out.attempt_seq}: two holders"
            )
        ledger.close(h.key, outcome)
        ledger.count(outcome)
        if terminal:
            ledger.finished(h.todo_id)


def reaper(ledger: Ledger, stop: threading.Event) -> None:
    while not stop.is_set():
        sweep = lifecycle.reap()
        with ledger.lock:
            ledger.reaped.update(sweep.requeued + sweep.dead_lettered)
            ledger.stats["reaped"] += len(sweep.requeued) + len(sweep.dead_lettered)
        for todo_id in sweep.dead_lettered:
            ledger.finished(todo_id)
        ledger.count("retries_requeued", len(lifecycle.requeue_due_retries()))
        time.sleep(0.02)


def expirer(
    ledger: Ledger, abandoned: queue.SimpleQueue[tuple[str, int]], stop: threading.Event
) -> None:
    rng = random.Random(0)
    while not stop.is_set():
        try:
            todo_id, seq = abandoned.get(timeout=0.05)
        except queue.Empty:
            continue
        time.sleep(rng.uniform(0, 0.02))
        ledger.count("lapsed_abandoned", expire_lease(todo_id, attempt=seq))


# Each query returns the rows that break an invariant; under READ COMMITTED one statement reads
# one snapshot, so each compares todos and attempts as they stood together.
INVARIANTS = {
    "two open attempts": """
        SELECT a.todo_id FROM todo_attempts a JOIN todos t ON t.id = a.todo_id
         WHERE t.endpoint_id = %(endpoint_id)s AND a.ended_at IS NULL
         GROUP BY a.todo_id HAVING count(*) > 1
    """,
    "a claimed todo whose holder has no open attempt": """
        SELECT t.id, t.owner, t.attempts_total FROM todos t
         WHERE t.endpoint_id = %(endpoint_id)s AND t.state = 'claimed'
           AND NOT EXISTS (SELECT 1 FROM todo_attempts a
                            WHERE a.todo_id = t.id AND a.ended_at IS NULL
                              AND a.seq = t.attempts_total AND a.owner = t.owner)
    """,
    "an open attempt on a todo not claimed, or not its latest": """
        SELECT t.id, t.state, a.seq FROM todo_attempts a JOIN todos t ON t.id = a.todo_id
         WHERE t.endpoint_id = %(endpoint_id)s AND a.ended_at IS NULL
           AND (t.state <> 'claimed' OR a.seq <> t.attempts_total)
    """,
    "the todo's fence copy differs from its open attempt's digest": """
        SELECT t.id, t.state, a.seq FROM todos t
          JOIN todo_attempts a ON a.todo_id = t.id AND a.seq = t.attempts_total
         WHERE t.endpoint_id = %(endpoint_id)s AND a.ended_at IS NULL
           AND t.lease_token_hash IS DISTINCT FROM a.lease_token_hash
    """,
    "attempts_total out of step with the rows": """
        SELECT t.id, t.attempts_total, t.attempts_pruned, a.n, a.top FROM todos t
          LEFT JOIN (SELECT todo_id, count(*) AS n, max(seq) AS top
                       FROM todo_attempts GROUP BY todo_id) a ON a.todo_id = t.id
         WHERE t.endpoint_id = %(endpoint_id)s
           AND (t.attempts_total <> COALESCE(a.n, 0) + t.attempts_pruned
                OR t.attempts_total <> COALESCE(a.top, 0))
    """,
}
CLOSED_SQL = """
    SELECT a.todo_id, a.seq, a.ended_at, a.outcome, a.disposition
      FROM todo_attempts a JOIN todos t ON t.id = a.todo_id
     WHERE t.endpoint_id = %(endpoint_id)s AND a.ended_at IS NOT NULL
"""


def checker(ledger: Ledger, stop: threading.Event) -> None:
    """Check the invariants while the run goes on, and that a closed attempt never changes."""
    params = {"endpoint_id": ledger.endpoint_id}
    seen: dict[tuple[str, int], tuple[Any, ...]] = {}
    while not stop.is_set():
        for name, sql in INVARIANTS.items():
            for row in fetch_all(sql, params):
                ledger.crew.problem(f"checker: {name}: {row}")
        now = {
            (r["todo_id"], r["seq"]): (r["ended_at"], r["outcome"], r["disposition"])
            for r in fetch_all(CLOSED_SQL, params)
        }
        for key, closed in seen.items():
            if now.get(key) != closed:
                ledger.crew.problem(
                    f"checker: closed attempt {key} was {closed}, now {now.get(key)}"
                )
        seen = now
        ledger.count("checks")
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_eight_workers_draining_five_hundred_todos_never_share_a_lease_or_an_attempt(
    personas: Personas,
) -> None:
    endpoint_id = personas.endpoint_a.id
    crew = Crew()
    ids = [
        lifecycle.create(endpoint_id, queue=QUEUES[i % 2], max_attempts=MAX_ATTEMPTS).id
        for i in range(TODOS)
    ]
    ledger = Ledger(crew, endpoint_id, ids, unfinished=set(ids))
    stop = threading.Event()
    abandoned: queue.SimpleQueue[tuple[str, int]] = queue.SimpleQueue()
    seed = random.randrange(2**32)

    began = time.monotonic()
    for n in range(WORKERS):
        worker = Worker(n, ledger, abandoned, stop, seed + n)
        crew.start(worker.owner, worker.run)
    crew.start("reaper", lambda: reaper(ledger, stop))
    crew.start("expirer", lambda: expirer(ledger, abandoned, stop))
    crew.start("checker", lambda: checker(ledger, stop))
    left = TODOS
    while time.monotonic() - began < RUN_DEADLINE_SECONDS and not crew.problems:
        row = fetch_one(UNFINISHED_SQL, {"endpoint_id": endpoint_id})
        assert row is not None
        left = row["n"]
        if left == 0:
            break
        time.sleep(0.2)
    elapsed = time.monotonic() - began
    stop.set()
    crew.join(timeout=30)
    print(f"\nseed={seed} elapsed={elapsed:.1f}s {dict(sorted(ledger.stats.items()))}")

    assert not crew.problems, f"seed {seed}:\n" + "\n".join(crew.problems[:50])
    assert left == 0, f"seed {seed}: {left} todos unfinished after {elapsed:.0f} s"
    assert elapsed < RUN_BUDGET_SECONDS, f"the run took {elapsed:.0f} s"

    todos = {
        r["id"]: r
        for r in fetch_all("SELECT * FROM todos WHERE endpoint_id = %(e)s", {"e": endpoint_id})
    }
    rows = fetch_all(
        "SELECT a.* FROM todo_attempts a JOIN todos t ON t.id = a.todo_id"
        " WHERE t.endpoint_id = %(e)s ORDER BY a.todo_id, a.seq",
        {"e": endpoint_id},
    )
    by_todo: dict[str, list[dict[str, Any]]] = {todo_id: [] for todo_id in todos}
    for a in rows:
        by_todo[a["todo_id"]].append(a)
    stored = {(a["todo_id"], a["seq"]): a for a in rows}

    for todo_id, todo in todos.items():
        attempts = by_todo[todo_id]
        assert todo["state"] in ("completed", "failed"), todo
        assert todo["state"] == "completed" or todo["next_retry_at"] is None, todo
        assert todo["attempts_pruned"] == 0, todo
        assert todo["attempts_total"] == len(attempts) + todo["attempts_pruned"], todo
        assert [a["seq"] for a in attempts] == list(range(1, todo["attempts_total"] + 1)), todo_id
        assert all(a["ended_at"] is not None for a in attempts), attempts
        last = attempts[-1]
        if todo["state"] == "completed":
            assert (last["outcome"], last["disposition"]) == ("completed", "done"), last
        else:
            assert last["outcome"] in ("failed", "reaped", "released"), last
            assert last["disposition"] == "dead_lettered", last

    # Every attempt was opened by exactly one claim the workers saw succeed, by that worker.
    assert set(ledger.opened) == set(stored)
    assert all(stored[key]["owner"] == owner for key, owner in ledger.opened.items())
    # Every attempt was closed by exactly one actor, as that actor was told.
    for key, a in stored.items():
        if a["outcome"] == "reaped":
            assert key not in ledger.closed, (a, ledger.closed[key])
        else:
            assert ledger.closed.get(key) == a["outcome"], (a, ledger.closed.get(key))
    reaped_rows = Counter(a["todo_id"] for a in rows if a["outcome"] == "reaped")
    assert reaped_rows == ledger.reaped
    assert set(ledger.closed) <= set(stored)
    # Every holder told it had lost its lease (or that walked away) lost it to a takeover or reap.
    for key in ledger.must_have_died:
        assert stored[key]["outcome"] in DIED, stored[key]
    dispositions = {
        "completed": {"done"},
        "failed": {"retry_scheduled", "dead_lettered"},
        "released": {"requeued", "dead_lettered"},
        "lease_expired": {"requeued"},
        "reaped": {"requeued", "dead_lettered"},
    }
    for a in rows:
        assert a["disposition"] in dispositions[a["outcome"]], a

    # The run exercised what it is meant to exercise.
    for what in (
        "takeovers",
        "reaped",
        "crashes",
        "stalls",
        "expected_conflicts",
        "fenced_claims",
        "unfenced_claims",
        "claims_by_id",
        "claim_by_id_conflicts",
        "heartbeats",
        "released",
        "failed",
        "retries_requeued",
        "checks",
    ):
        assert ledger.stats[what] > 0, (what, ledger.stats)


# --- 2. a reaper and a taker racing for one lapsed lease --------------------------------------

TUG_ROUNDS = 200


@pytest.mark.django_db(transaction=True)
def test_a_reaper_and_a_taker_racing_for_a_lapsed_lease_close_it_exactly_once(
    personas: Personas,
) -> None:
    endpoint_id = personas.endpoint_a.id
    crew = Crew()
    start = threading.Barrier(3, timeout=30)
    done = threading.Barrier(3, timeout=30)
    todo_ids: list[str] = []
    sweeps: list[SweepResult | BaseException] = []
    takes: list[ClaimResult | BaseException | None] = []

    def reaper_side() -> None:
        for _ in range(TUG_ROUNDS):
            start.wait()
            try:
                sweeps.append(lifecycle.reap())
            except Exception as exc:
                sweeps.append(exc)
            done.wait()

    def taker_side() -> None:
        for i in range(TUG_ROUNDS):
            start.wait()
            try:
                if i % 2:
                    takes.append(lifecycle.claim(endpoint_id, todo_ids[i], owner="taker"))
                else:
                    takes.append(lifecycle.claim_next(endpoint_id, [f"tug-{i}"], owner="taker"))
            except Exception as exc:
                takes.append(exc)
            done.wait()

    crew.start("reaper", reaper_side)
    crew.start("taker", taker_side)
    tally: Counter[str] = Counter()
    for i in range(TUG_ROUNDS):
        todo_ids.append(
            lapsed(
                endpoint_id, f"tug-{i}", owner="stale", lease_ttl_seconds=TTL, max_attempts=3
            ).todo.id
        )
        start.wait()
        done.wait()
        todo_id, sweep, take = todo_ids[i], sweeps[i], takes[i]
        context = f"round {i}: sweep={sweep!r} take={take!r}"
        assert not isinstance(sweep, BaseException), context
        assert not isinstance(take, BaseException), context
        reaper_closed = todo_id in sweep.requeued + sweep.dead_lettered
        taker_closed = take is not None and take.took_over
        assert reaper_closed != taker_closed, context  # never both, never neither
        todo, attempts = todo_row(todo_id), attempt_rows(todo_id)
        assert todo["attempts_total"] == len(attempts) + todo["attempts_pruned"], context
        assert [a["seq"] for a in attempts] == list(range(1, len(attempts) + 1)), context
        first = attempts[0]
        expected = "reaped" if reaper_closed else "lease_expired"
        assert (first["outcome"], first["disposition"]) == (expected, "requeued"), context
        open_ = [a for a in attempts if a["ended_at"] is None]
        if take is None:  # the taker skipped the row the reaper held, or came before it
            assert reaper_closed, context
            assert (todo["state"], len(attempts), open_) == ("pending", 1, []), context
            tally["reaper won, taker found nothing"] += 1
            continue
        assert take.todo.id == todo_id and take.attempt_seq == 2, context
        assert len(attempts) == 2 and open_ == [attempts[1]], context
        assert (todo["state"], todo["owner"], open_[0]["owner"]) == ("claimed", "taker", "taker"), (
            context
        )
        if taker_closed:
            assert [p.outcome for p in take.prior_attempts] == ["lease_expired"], context
            tally["taker took over"] += 1
        else:
            tally["reaper won, taker claimed afresh"] += 1
        lifecycle.complete(endpoint_id, todo_id, owner="taker")  # no lease left to lapse later
    crew.join(timeout=10)
    print(f"\n{dict(tally)}")
    assert not crew.problems, crew.problems
    assert sum(tally.values()) == TUG_ROUNDS


# --- 3. two reapers at once -------------------------------------------------------------------

REAPER_ROUNDS = 8
LAPSED_PER_ROUND = 60


@pytest.mark.django_db(transaction=True)
def test_two_reapers_at_once_reap_each_lapsed_lease_exactly_once(personas: Personas) -> None:
    endpoint_id = personas.endpoint_a.id
    crew = Crew()
    start = threading.Barrier(3, timeout=30)
    done = threading.Barrier(3, timeout=30)
    results: dict[str, list[SweepResult]] = {"one": [], "two": []}

    def reaper_side(name: str, seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(REAPER_ROUNDS):
            start.wait()
            while True:  # until this reaper finds nothing it can lock
                sweep = lifecycle.reap(limit=rng.randint(1, 8))
                results[name].append(sweep)
                if not (sweep.requeued or sweep.dead_lettered):
                    break
            done.wait()

    crew.start("reaper one", lambda: reaper_side("one", 1))
    crew.start("reaper two", lambda: reaper_side("two", 2))
    for i in range(REAPER_ROUNDS):
        # Half the todos have spent their budget: those are dead-lettered, the rest requeued.
        budgets = {
            lapsed(
                endpoint_id,
                "double",
                owner=f"gone-{j}",
                lease_ttl_seconds=TTL,
                max_attempts=1 + j % 2,
            ).todo.id: 1 + j % 2
            for j in range(LAPSED_PER_ROUND)
        }
        start.wait()
        done.wait()
        requeued = [t for s in results["one"] + results["two"] for t in s.requeued]
        dead = [t for s in results["one"] + results["two"] for t in s.dead_lettered]
        both = Counter(requeued + dead)
        assert [t for t, n in both.items() if n > 1] == [], f"round {i}: reaped twice"
        assert set(both) == set(budgets), f"round {i}"
        assert set(dead) == {t for t, budget in budgets.items() if budget == 1}
        for todo_id, budget in budgets.items():
            todo, attempts = todo_row(todo_id), attempt_rows(todo_id)
            state, disposition = (
                ("failed", "dead_lettered") if budget == 1 else ("pending", "requeued")
            )
            assert (todo["state"], todo["attempts_total"], todo["owner"]) == (state, 1, None)
            assert len(attempts) == 1, attempts
            assert (attempts[0]["outcome"], attempts[0]["disposition"]) == ("reaped", disposition)
        results["one"].clear()
        results["two"].clear()
    crew.join(timeout=10)
    assert not crew.problems, crew.problems


# --- waits on a row lock: the statement's snapshot is older than the row it finally locks -----
#
# A statement that waits for a todo's row lock (or finds the row changed since its snapshot)
# re-checks the todos row at its newest committed version (READ COMMITTED's EvalPlanQual), but
# reads todo_attempts from the snapshot it took before: an attempt opened in between is invisible
# to it. Each test below makes that gap deterministic; before 9b460fc each of them failed (the
# waiting claim raised AttemptInvariantViolated, the prior attempts missed the reaped one, a stale
# fenced holder completed the todo and left the new attempt open, the reaper requeued a todo with
# its attempt still open).


@pytest.mark.django_db(transaction=True)
def test_a_claim_that_waited_on_the_row_lock_closes_the_attempt_opened_while_it_waited(
    personas: Personas,
) -> None:
    endpoint_id = personas.endpoint_a.id
    todo_id = lapsed(
        endpoint_id, "waits", owner="first", lease_ttl_seconds=TTL, max_attempts=3
    ).todo.id
    crew = Crew()
    with transaction.atomic():
        # While the taker waits on this transaction's row lock, the todo is reaped, claimed
        # again (attempt 2 opens) and that lease lapses too.
        assert lifecycle.reap().requeued == (todo_id,)
        second = lifecycle.claim(endpoint_id, todo_id, owner="second", lease_ttl_seconds=TTL)
        assert expire_lease(todo_id, attempt=second.attempt_seq) == 1
        taken = behind_this_transaction(
            crew, "taker", lambda: lifecycle.claim(endpoint_id, todo_id, owner="third")
        )
    crew.join(timeout=10)
    assert not crew.problems, crew.problems
    (result,) = taken
    attempts = [(a["seq"], a["outcome"]) for a in attempt_rows(todo_id)]
    if isinstance(result, LeaseConflict):
        # Refusing is sound too: the claim could not see attempt 2, so it left the todo alone
        # and a later claim (or the reaper) deals with the lapsed lease.
        assert (todo_row(todo_id)["owner"], attempts) == ("second", [(1, "reaped"), (2, None)])
        result = lifecycle.claim(endpoint_id, todo_id, owner="third")
        attempts = [(a["seq"], a["outcome"]) for a in attempt_rows(todo_id)]
    assert isinstance(result, ClaimResult), repr(result)
    assert result.took_over and result.attempt_seq == 3
    assert attempts == [(1, "reaped"), (2, "lease_expired"), (3, None)]


@pytest.mark.django_db(transaction=True)
def test_a_claim_that_waited_for_the_reaper_lists_the_reaped_attempt_among_its_priors(
    personas: Personas,
) -> None:
    endpoint_id = personas.endpoint_a.id
    todo_id = lapsed(
        endpoint_id, "waits", owner="first", lease_ttl_seconds=TTL, max_attempts=3
    ).todo.id
    crew = Crew()
    with transaction.atomic():
        assert lifecycle.reap().requeued == (todo_id,)
        taken = behind_this_transaction(
            crew, "taker", lambda: lifecycle.claim(endpoint_id, todo_id, owner="second")
        )
    crew.join(timeout=10)
    assert not crew.problems, crew.problems
    (result,) = taken
    assert isinstance(result, ClaimResult), repr(result)
    assert (result.took_over, result.attempt_seq) == (False, 2)
    # The spec: the claim carries the newest closed attempts as they stand once it commits.
    assert [(p.seq, p.outcome) for p in result.prior_attempts] == [(1, "reaped")]


@pytest.mark.django_db(transaction=True)
def test_a_fenced_report_that_waited_on_a_takeover_is_refused(personas: Personas) -> None:
    endpoint_id = personas.endpoint_a.id
    todo = lifecycle.create(endpoint_id, queue="waits")
    stale = lifecycle.claim(endpoint_id, todo.id, owner="agent", require_fence=True)
    assert expire_lease(todo.id, attempt=stale.attempt_seq) == 1
    crew = Crew()
    with transaction.atomic():
        # A second process of the same agent (same owner string) takes the lapsed lease over
        # with its own fence while the stale one's completion waits on the row lock.
        fresh = lifecycle.claim(endpoint_id, todo.id, owner="agent", require_fence=True)
        assert fresh.took_over and fresh.attempt_seq == 2
        reported = behind_this_transaction(
            crew,
            "stale",
            lambda: lifecycle.complete(
                endpoint_id, todo.id, owner="agent", lease_token=stale.lease_token
            ),
        )
    crew.join(timeout=10)
    assert not crew.problems, crew.problems
    (result,) = reported
    attempts = attempt_rows(todo.id)
    assert isinstance(result, LeaseConflict), (repr(result), attempts)
    assert todo_row(todo.id)["state"] == "claimed"
    assert [(a["seq"], a["outcome"]) for a in attempts] == [(1, "lease_expired"), (2, None)]


@pytest.mark.django_db(transaction=True)
def test_an_extend_that_waited_on_a_takeover_leaves_the_new_attempts_first_write_due(
    personas: Personas,
) -> None:
    # The owner's extend passes on whoever holds the lease, so it extends the new holder's. Its
    # snapshot cannot see the new attempt, so it must not record an attempt write on the todo
    # either: the new holder's first heartbeat then writes its attempt.
    endpoint_id = personas.endpoint_a.id
    todo = lifecycle.create(endpoint_id, queue="waits")
    stale = lifecycle.claim(endpoint_id, todo.id, owner="agent")
    assert expire_lease(todo.id, attempt=stale.attempt_seq) == 1
    crew = Crew()
    with transaction.atomic():
        fresh = lifecycle.claim(endpoint_id, todo.id, owner="agent-2")
        assert fresh.took_over and fresh.attempt_seq == 2
        extended = behind_this_transaction(
            crew, "extend", lambda: lifecycle.operator_extend(personas.alice.id, todo.id)
        )
    crew.join(timeout=10)
    assert not crew.problems, crew.problems
    (result,) = extended
    assert not isinstance(result, Exception), repr(result)
    assert todo_row(todo.id)["attempt_heartbeat_at"] is None
    assert attempt_rows(todo.id)[-1]["last_heartbeat_at"] is None

    lifecycle.heartbeat(endpoint_id, todo.id, owner="agent-2")

    assert todo_row(todo.id)["attempt_heartbeat_at"] is not None
    assert attempt_rows(todo.id)[-1]["last_heartbeat_at"] is not None


FODDER = 250


@pytest.mark.django_db(transaction=True)
def test_a_reap_whose_snapshot_predates_a_reclaim_closes_the_attempt_that_reclaim_opened(
    personas: Personas,
) -> None:
    """The reaper locks with SKIP LOCKED, so no lock can hold it between its snapshot and a row.
    A sweep through many older lapsed leases opens that gap instead: the re-claim (lapsed too)
    commits once the sweep is locking rows, before it reaches the todo under test."""
    endpoint_id = personas.endpoint_a.id
    crew = Crew()
    swept: list[SweepResult] = []
    pid: queue.SimpleQueue[int] = queue.SimpleQueue()

    def sweep() -> None:
        pid.put(backend_pid())
        swept.append(lifecycle.reap(limit=10 * FODDER))

    for round_ in range(3):
        for _ in range(FODDER):  # lapsed leases claimed before the todo under test
            fodder = lifecycle.create(endpoint_id, queue="fodder")
            lifecycle.claim(endpoint_id, fodder.id, owner="fodder", lease_ttl_seconds=TTL)
        todo_id = lapsed(
            endpoint_id, f"sweep-{round_}", owner="first", lease_ttl_seconds=TTL, max_attempts=3
        ).todo.id
        with connection.cursor() as cur:
            cur.execute(
                "UPDATE todos SET lease_expires_at = now() - interval '1 second'"
                " WHERE queue = 'fodder' AND state = 'claimed'"
            )
        swept.clear()
        with transaction.atomic():
            second = lifecycle.claim(endpoint_id, todo_id, owner="second", lease_ttl_seconds=TTL)
            assert second.took_over and expire_lease(todo_id, attempt=second.attempt_seq) == 1
            crew.start("reaper", sweep)
            reaper_pid = pid.get(timeout=10)
            deadline = time.monotonic() + 10
            while True:  # until the sweep has taken its snapshot and begun locking rows
                assert time.monotonic() < deadline, "the sweep never started"
                row = backend_activity(reaper_pid)
                if row is not None and "SKIP LOCKED" in row["query"] and row["writing"]:
                    break
        crew.join(timeout=30)
        assert not crew.problems, crew.problems
        (result,) = swept
        todo, attempts = todo_row(todo_id), attempt_rows(todo_id)
        opened = [(a["seq"], a["outcome"]) for a in attempts]
        assert todo["attempts_total"] == len(attempts), opened
        if todo_id not in result.requeued:
            # The sweep skipped the row (locked, or its open attempt not yet visible to it):
            # still claimed by the re-claim, and the next sweep reaps it.
            assert (todo["state"], opened) == ("claimed", [(1, "lease_expired"), (2, None)])
            assert lifecycle.reap().requeued == (todo_id,)
            after = [(a["seq"], a["outcome"]) for a in attempt_rows(todo_id)]
            assert after == [(1, "lease_expired"), (2, "reaped")]
            continue
        # Reaped: attempt 2 is closed, and the todo can be claimed again.
        again: object
        try:
            again = lifecycle.claim(endpoint_id, todo_id, owner="third")
        except Exception as exc:
            again = exc
        assert todo["state"] == "pending" and isinstance(again, ClaimResult), (opened, again)
        assert opened == [(1, "lease_expired"), (2, "reaped")]


def behind_a_claim(
    endpoint_id: UUID, name: str, act: Callable[[str], object]
) -> tuple[str, ClaimResult, object]:
    """A new todo claimed in a transaction that ``act(todo_id)``, in a thread, waits behind: the
    todo's id, the claim, and what ``act`` returned (or raised) once the claim committed."""
    todo_id = lifecycle.create(endpoint_id, queue="race").id
    crew = Crew()
    with transaction.atomic():
        claimed = lifecycle.claim(endpoint_id, todo_id, owner="agent", lease_ttl_seconds=TTL)
        out = behind_this_transaction(crew, name, lambda: act(todo_id))
    crew.join(timeout=10)
    assert not crew.problems, crew.problems
    (result,) = out
    return todo_id, claimed, result


@pytest.mark.django_db(transaction=True)
def test_a_cancel_that_waited_on_a_claim_closes_the_attempt_that_claim_opened(
    personas: Personas,
) -> None:
    """A requester's cancel arriving as an agent claims the todo (MCP Tasks and A2A cancel
    right after submitting): the cancel's snapshot predates the claim's attempt."""
    endpoint_id = personas.endpoint_a.id
    todo_id, claimed, result = behind_a_claim(
        endpoint_id,
        "requester",
        lambda todo_id: lifecycle.cancel(Scope.of_endpoint(endpoint_id), todo_id, reason="race"),
    )
    assert isinstance(result, ReportResult), repr(result)
    assert result.todo.state == "canceled"
    assert result.attempt_seq == claimed.attempt_seq
    attempts = [(a["seq"], a["outcome"], a["ended_at"] is not None) for a in attempt_rows(todo_id)]
    assert attempts == [(claimed.attempt_seq, "canceled", True)]


@pytest.mark.django_db(transaction=True)
def test_a_revoke_that_waited_on_a_claim_dead_letters_the_todo_that_claim_took(
    personas: Personas,
) -> None:
    """Revoking an endpoint as its agent claims one of its todos: the revoke's snapshot
    predates the claim's attempt, and the claimed todo must not outlive the endpoint."""
    endpoint_id = personas.endpoint_a.id
    todo_id, claimed, result = behind_a_claim(
        endpoint_id, "owner", lambda _: lifecycle.revoke_endpoint(personas.alice.id, endpoint_id)
    )
    assert isinstance(result, RevokeResult), repr(result)
    assert result.endpoint_revoked and result.dead_lettered == (todo_id,)
    assert todo_row(todo_id)["state"] == "failed"
    attempts = [(a["seq"], a["outcome"]) for a in attempt_rows(todo_id)]
    assert attempts == [(claimed.attempt_seq, "revoked")]
