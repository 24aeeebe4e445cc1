"""max_in_flight under races (todos/sql/_queue_limited.sql): claims of a limited queue run one
at a time behind its settings row, and a claim whose snapshot predates another's commit never
counts stale. These commit for real (``transaction=True``): the lock and the counts live
between connections."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import transaction

from switchboard.lib.errors import LeaseConflict
from tests.base import Personas
from tests.concurrency.harness import Crew, behind_this_transaction, raw_connection
from tests.reach import new_todo
from todos import lifecycle
from todos.types import QueueEmpty

LIMIT = 3
AGENTS = 8
TODOS = 120


@pytest.mark.django_db(transaction=True)
def test_eight_agents_claiming_at_once_never_hold_more_than_the_limit(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    for _ in range(TODOS):
        # Budget enough for every release: a release spends an attempt, and the release of the
        # last one dead-letters the todo, which would then never complete.
        new_todo(ep, "triage", max_attempts=TODOS)
    lifecycle.set_queue_limits(ep, "triage", human_id=None, max_in_flight=LIMIT)
    crew = Crew()
    stop = threading.Event()
    samples: list[int] = []
    done: list[str] = []
    lock = threading.Lock()

    def sample() -> None:
        # Another connection, reading as often as it can while the agents run.
        with raw_connection(autocommit=True) as conn:
            while not stop.is_set():
                row = conn.execute(
                    "SELECT count(*) FROM todos WHERE endpoint_id = %s AND queue = 'triage'"
                    " AND state = 'claimed'",
                    [ep],
                ).fetchone()
                assert row is not None
                samples.append(row[0])

    def agent(n: int) -> None:
        owner = f"agent-{n}"
        rounds = 0
        while not stop.is_set():
            got = lifecycle.claim_next(ep, ["triage"], owner=owner)
            if got is None:
                time.sleep(0.002)
                continue
            rounds += 1
            time.sleep(0.005)  # hold it a moment, so that the others find the queue full
            # Interleave the ways out of the queue's count: most complete, some release.
            if rounds % 4 == 0:
                lifecycle.release(ep, got.todo.id, owner=owner)
            else:
                lifecycle.complete(ep, got.todo.id, owner=owner)
                with lock:
                    done.append(got.todo.id)

    crew.start("sampler", sample)
    for n in range(AGENTS):
        crew.start(f"agent {n}", lambda n=n: agent(n))
    deadline = time.monotonic() + 60
    while len(done) < TODOS and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    crew.join(30)

    assert not crew.problems, crew.problems
    assert len(done) == TODOS, f"only {len(done)} of {TODOS} completed"
    assert len(samples) > 100
    assert max(samples) <= LIMIT, f"held {max(samples)} at once, limit {LIMIT}"
    assert max(samples) == LIMIT  # the limit was reached, so the race was run


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("limit", "second_takes"), [(1, False), (2, True)])
def test_a_claim_that_waited_on_another_counts_it(
    personas: Personas, limit: int, second_takes: bool
) -> None:
    """The second claim's snapshot predates the first's commit: it must not count stale (and
    over-claim), nor give up where there is room (it runs again behind the lock)."""
    ep = personas.endpoint_a.id
    new_todo(ep, "triage")
    new_todo(ep, "triage")
    lifecycle.set_queue_limits(ep, "triage", human_id=None, max_in_flight=limit)
    crew = Crew()

    with transaction.atomic():
        assert lifecycle.claim_next(ep, ["triage"], owner="first") is not None
        out = behind_this_transaction(
            crew, "second", lambda: lifecycle.claim_next(ep, ["triage"], owner="second")
        )
    crew.join(10)

    assert not crew.problems, crew.problems
    assert (out[0] is not None) is second_takes


@pytest.mark.django_db(transaction=True)
def test_a_claim_by_id_that_waited_on_another_counts_it(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    new_todo(ep, "triage")
    other = new_todo(ep, "triage").id
    lifecycle.set_queue_limits(ep, "triage", human_id=None, max_in_flight=1)
    crew = Crew()

    with transaction.atomic():
        assert lifecycle.claim_next(ep, ["triage"], owner="first") is not None
        out = behind_this_transaction(
            crew, "second", lambda: lifecycle.claim(ep, other, owner="second")
        )
    crew.join(10)

    assert not crew.problems, crew.problems
    assert isinstance(out[0], LeaseConflict)


@pytest.mark.django_db(transaction=True)
def test_a_queue_whose_todos_other_claims_hold_locked_reads_busy(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    new_todo(ep, "triage")
    with raw_connection() as conn:
        conn.execute("SELECT id FROM todos WHERE queue = 'triage' FOR UPDATE")
        got = lifecycle.claim_next_or_why(ep, ["triage"], owner="second")
        conn.rollback()

    assert got == (QueueEmpty("triage", "busy"),)
