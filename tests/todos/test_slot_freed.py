"""A queue with a ``max_in_flight`` rings its waiting agents when one of its slots frees: the
statement that ends a hold taken from a limited queue (complete, fail, release, reject, cancel,
bulk cancel, reap, a deadline) announces one queue-wide ``rung`` (reason ``freed``) at commit,
which every process's doorbell pushes to the streams subscribed to the queue. A queue without
that limit announces nothing more than before (docs/decisions/0028-queue-limits.md).

The notifications are read from a second connection LISTENing, as the server's change feed
does; the tests commit for real, since a NOTIFY is delivered only at COMMIT.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import psycopg
import pytest
from django.db import connection

from switchboard.lib.sql import fetch_all
from switchboard.scope import Scope
from tests.base import Personas
from tests.concurrency.harness import raw_connection
from tests.reach import OWNER, expire_lease, new_todo
from tests.todos.test_doorbell import of_kind
from todos import lifecycle
from todos.filters import TodoFilters
from todos.models import Todo

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def rungs() -> Iterator[psycopg.Connection[Any]]:
    with raw_connection(autocommit=True) as conn:
        conn.execute("LISTEN todo_changed")
        yield conn


def freed(
    conn: psycopg.Connection[Any], expected: int = 1, timeout: float = 2.0
) -> list[tuple[str, str, str]]:
    """The queue-wide rings of a freed slot (endpoint, queue, todo): up to ``expected`` within
    ``timeout``, then whatever else arrives in a short wait (a second one would show there)."""
    found = [
        (n["endpoint_id"], n["queue"], n["todo_id"])
        for n in of_kind(conn, "rung", expected, timeout)
        if n.get("reason") == "freed"
    ]
    return found + [
        (n["endpoint_id"], n["queue"], n["todo_id"])
        for n in of_kind(conn, "rung", 1, 0.1)
        if n.get("reason") == "freed"
    ]


def drain(conn: psycopg.Connection[Any]) -> None:
    """Drop what was announced so far (the limits' own ring, the claims' changes)."""
    for _ in conn.notifies(timeout=0.1):
        pass


def limited(ep: UUID, queue: str = "builds", n: int = 1) -> None:
    lifecycle.set_queue_limits(ep, queue, human_id=None, max_in_flight=n)


def held(ep: UUID, queue: str = "builds") -> str:
    new_todo(ep, queue)
    got = lifecycle.claim_next(ep, [queue], owner=OWNER)
    assert got is not None
    return got.todo.id


def test_completing_a_hold_of_a_full_queue_rings_its_waiters(
    personas: Personas, rungs: psycopg.Connection[Any]
) -> None:
    ep = personas.endpoint_a.id
    limited(ep)
    todo_id = held(ep)
    new_todo(ep, "builds")
    assert lifecycle.claim_next(ep, ["builds"], owner="waiter") is None  # full
    assert Todo.objects.get(pk=todo_id).holds_limited_slot
    drain(rungs)

    lifecycle.complete(ep, todo_id, owner=OWNER)

    assert freed(rungs) == [(str(ep), "builds", "")]
    assert lifecycle.claim_next(ep, ["builds"], owner="waiter") is not None


def test_a_queue_without_max_in_flight_announces_nothing_more(
    personas: Personas, rungs: psycopg.Connection[Any]
) -> None:
    ep = personas.endpoint_a.id
    lifecycle.set_queue_limits(ep, "rated", human_id=None, claims_per_minute=100)
    plain, rated = held(ep, "plain"), held(ep, "rated")
    assert not Todo.objects.filter(pk__in=[plain, rated], holds_limited_slot=True).exists()
    drain(rungs)

    lifecycle.complete(ep, plain, owner=OWNER)
    lifecycle.fail(ep, rated, owner=OWNER)

    assert freed(rungs, timeout=0.3) == []


def test_every_end_of_a_hold_rings_and_ending_a_todo_not_held_does_not(
    personas: Personas, rungs: psycopg.Connection[Any]
) -> None:
    ep = personas.endpoint_a.id
    limited(ep, n=10)
    ends = {
        "fail": lambda t: lifecycle.fail(ep, t, owner=OWNER),
        "release": lambda t: lifecycle.release(ep, t, owner=OWNER),
        "reject": lambda t: lifecycle.reject(ep, t, owner=OWNER),
        "cancel": lambda t: lifecycle.cancel(Scope.of_human(personas.alice.id), t),
    }
    for name, end in ends.items():
        todo_id = held(ep)
        drain(rungs)
        end(todo_id)
        assert freed(rungs) == [(str(ep), "builds", "")], name

    # The reaper's end of a lapsed lease, and the deadline sweep's of a held todo.
    lapsed = held(ep)
    expire_lease(lapsed)
    drain(rungs)
    assert lifecycle.reap().requeued == (lapsed,)
    assert freed(rungs) == [(str(ep), "builds", "")]
    late = held(ep)
    fetch_all("UPDATE todos SET finish_by = now() WHERE id = %(id)s", {"id": late})
    drain(rungs)
    assert lifecycle.dead_letter_late() == (late,)
    assert freed(rungs) == [(str(ep), "builds", "")]

    # The released todo is pending again (its flag as the last claim left it): canceling it,
    # or any pending todo, frees no slot.
    pending = Todo.objects.filter(state="pending", queue="builds").values_list("id", flat=True)
    for todo_id in pending:
        lifecycle.cancel(Scope.of_human(personas.alice.id), todo_id)
    assert freed(rungs, timeout=0.3) == []


def test_a_bulk_cancel_of_many_holds_rings_once_per_queue(
    personas: Personas, rungs: psycopg.Connection[Any]
) -> None:
    ep = personas.endpoint_a.id
    limited(ep, n=10)
    for _ in range(3):
        held(ep)
    with connection.cursor() as cur:
        cur.execute("SELECT now() + interval '1 minute'")
        seen_at = cur.fetchone()[0]
    drain(rungs)

    lifecycle.bulk_cancel(personas.alice.id, TodoFilters.parse({}), seen_at=seen_at)

    assert freed(rungs) == [(str(ep), "builds", "")]


def test_the_owners_board_claim_fills_a_slot_and_its_end_rings(
    personas: Personas, rungs: psycopg.Connection[Any]
) -> None:
    ep = personas.endpoint_a.id
    limited(ep)
    todo = new_todo(ep, "builds")
    lifecycle.operator_claim(personas.alice.id, todo.id)
    assert Todo.objects.get(pk=todo.id).holds_limited_slot
    drain(rungs)

    lifecycle.operator_complete(personas.alice.id, todo.id)

    assert freed(rungs) == [(str(ep), "builds", "")]
