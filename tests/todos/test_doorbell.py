"""The doorbell: transitions that make a todo claimable announce a ``ready`` change on the
change feed (``todo_changed``) when they commit; a recorded ring announces ``rung``.

A second psycopg connection LISTENs, as the server's listener does, and keeps the kind under
test (the feed carries every change); these tests commit for real (transaction=True), since a
NOTIFY is delivered only at COMMIT.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

import psycopg
import pytest
from django.db import connection, transaction

from tests.base import Personas
from tests.concurrency.harness import raw_connection
from tests.reach import OWNER, expire_lease, make_retry_due, new_todo
from todos import lifecycle
from todos.queries import TodoFilters

pytestmark = pytest.mark.django_db(transaction=True)


def of_kind(conn: psycopg.Connection[Any], kind: str, n: int, timeout: float) -> list[dict]:
    """Up to ``n`` ``todo_changed`` payloads of ``kind``, waiting at most ``timeout`` s in all."""
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while len(out) < n and (left := deadline - time.monotonic()) > 0:
        for note in conn.notifies(timeout=left, stop_after=1):
            assert note.channel == "todo_changed"
            data = json.loads(note.payload)
            if data["kind"] == kind:
                out.append(data)
    return out


class Listener:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def received(self, n: int = 1, timeout: float = 2.0) -> list[dict[str, Any]]:
        """Up to ``n`` rings (``ready`` changes: endpoint, queue, todo), waiting at most
        ``timeout`` seconds in all."""
        return [
            {k: note[k] for k in ("endpoint_id", "queue", "todo_id")}
            for note in of_kind(self.conn, "ready", n, timeout)
        ]

    def until(self, todo_id: str) -> list[dict[str, Any]]:
        """Every notification up to and including the first for ``todo_id``."""
        out: list[dict[str, Any]] = []
        while not out or out[-1]["todo_id"] != todo_id:
            got = self.received()
            assert got, f"no notification for {todo_id}; got {out}"
            out += got
        return out


@pytest.fixture
def listener() -> Iterator[Listener]:
    with raw_connection(autocommit=True) as conn:
        conn.execute("LISTEN todo_changed")
        yield Listener(conn)


def _ring(ep: UUID, todo_id: str, queue: str = "default") -> dict[str, Any]:
    return {"endpoint_id": str(ep), "queue": queue, "todo_id": todo_id}


def _subset(note: dict[str, Any], expected: dict[str, Any]) -> bool:
    return {k: note.get(k) for k in expected} == expected


def test_create_rings_with_the_endpoint_queue_and_todo(
    personas: Personas, listener: Listener
) -> None:
    ep = personas.endpoint_a.id

    todo = new_todo(ep, queue="ci-failures")

    (note,) = listener.received()
    assert note == _ring(ep, todo.id, "ci-failures")


def test_the_ring_waits_for_the_commit(personas: Personas, listener: Listener) -> None:
    ep = personas.endpoint_a.id

    with transaction.atomic():
        todo = new_todo(ep)
        assert listener.received(timeout=0.2) == []

    assert listener.received() == [_ring(ep, todo.id)]


def test_a_rolled_back_create_never_rings(personas: Personas, listener: Listener) -> None:
    ep = personas.endpoint_a.id

    def create_then_roll_back() -> None:
        with transaction.atomic():
            new_todo(ep)
            raise RuntimeError("roll back")

    with pytest.raises(RuntimeError):
        create_then_roll_back()
    sentinel = new_todo(ep)

    assert listener.until(sentinel.id) == [_ring(ep, sentinel.id)]


def _claimed_quietly(ep: UUID, listener: Listener, **kwargs: Any) -> str:
    todo = new_todo(ep, **kwargs)
    assert listener.received() == [_ring(ep, todo.id)]
    lifecycle.claim(ep, todo.id, owner=OWNER)
    return todo.id


def test_release_rings(personas: Personas, listener: Listener) -> None:
    ep = personas.endpoint_a.id
    todo_id = _claimed_quietly(ep, listener)

    lifecycle.release(ep, todo_id, owner=OWNER)

    assert listener.received() == [_ring(ep, todo_id)]


def test_reaping_back_to_pending_rings(personas: Personas, listener: Listener) -> None:
    ep = personas.endpoint_a.id
    todo_id = _claimed_quietly(ep, listener)
    expire_lease(todo_id)

    assert lifecycle.reap().requeued == (todo_id,)

    assert listener.received() == [_ring(ep, todo_id)]


def test_requeueing_a_due_retry_rings(personas: Personas, listener: Listener) -> None:
    ep = personas.endpoint_a.id
    todo_id = _claimed_quietly(ep, listener)
    lifecycle.fail(ep, todo_id, owner=OWNER)
    make_retry_due(todo_id)

    assert lifecycle.requeue_due_retries() == (todo_id,)

    (note,) = listener.until(todo_id)
    assert _subset(note, _ring(ep, todo_id))


def test_a_human_retry_rings(personas: Personas, listener: Listener) -> None:
    ep = personas.endpoint_a.id
    todo_id = _claimed_quietly(ep, listener)
    lifecycle.fail(ep, todo_id, owner=OWNER, retryable=False)

    lifecycle.retry(personas.alice.id, todo_id)

    (note,) = listener.until(todo_id)
    assert _subset(note, _ring(ep, todo_id))


Quiet = Callable[[Personas, str], Any]


def _expire_and_reap(todo_id: str) -> None:
    expire_lease(todo_id)
    assert lifecycle.reap().dead_lettered == (todo_id,)


QUIET: dict[str, Quiet] = {
    "claim": lambda p, t: None,  # the claim in _claimed_quietly itself
    "heartbeat": lambda p, t: lifecycle.heartbeat(p.endpoint_a.id, t, owner=OWNER),
    "complete": lambda p, t: lifecycle.complete(p.endpoint_a.id, t, owner=OWNER),
    "fail": lambda p, t: lifecycle.fail(p.endpoint_a.id, t, owner=OWNER),
    "cancel": lambda p, t: lifecycle.operator_cancel(p.alice.id, t),
    "reap to the dead letter": lambda p, t: _expire_and_reap(t),
}


@pytest.mark.parametrize("name", list(QUIET))
def test_transitions_that_leave_nothing_to_claim_do_not_ring(
    personas: Personas, listener: Listener, name: str
) -> None:
    ep = personas.endpoint_a.id
    todo_id = _claimed_quietly(ep, listener, max_attempts=1)

    QUIET[name](personas, todo_id)
    sentinel = new_todo(ep)  # rings after whatever the transition rang, if anything

    assert listener.until(sentinel.id) == [_ring(ep, sentinel.id)]


@pytest.fixture
def rung_listener() -> Iterator[psycopg.Connection[Any]]:
    with raw_connection(autocommit=True) as conn:
        conn.execute("LISTEN todo_changed")
        yield conn


def test_resuming_a_queue_rings_its_claimers_once(
    personas: Personas, rung_listener: psycopg.Connection[Any]
) -> None:
    ep = personas.endpoint_a.id
    lifecycle.pause_queue(ep, "triage", human_id=personas.alice.id)
    for _ in range(3):
        new_todo(ep, "triage")

    lifecycle.resume_queue(ep, "triage", human_id=personas.alice.id)

    notes = of_kind(rung_listener, "rung", 2, 2.0)
    assert [(n["endpoint_id"], n["queue"], n["reason"]) for n in notes] == [
        (str(ep), "triage", "resumed")
    ]


def test_a_resume_that_changed_nothing_rings_nobody(
    personas: Personas, rung_listener: psycopg.Connection[Any]
) -> None:
    lifecycle.resume_queue(personas.endpoint_a.id, "triage", human_id=personas.alice.id)

    assert of_kind(rung_listener, "rung", 1, 0.5) == []


def test_a_bulk_retry_rings_once_per_queue_it_refilled(
    personas: Personas, listener: Listener
) -> None:
    ep = personas.endpoint_a.id
    dead = []
    for queue in ("triage", "triage", "triage", "build"):
        todo_id = new_todo(ep, queue).id
        assert listener.received() == [_ring(ep, todo_id, queue)]
        lifecycle.claim(ep, todo_id, owner=OWNER)
        lifecycle.fail(ep, todo_id, owner=OWNER, retryable=False)
        dead.append(todo_id)
    with connection.cursor() as cur:
        cur.execute("SELECT now() + interval '1 minute'")
        seen_at = cur.fetchone()[0]

    result = lifecycle.bulk_retry(personas.alice.id, TodoFilters(), seen_at=seen_at)

    assert sorted(result.acted) == sorted(dead)
    notes = listener.received(n=4, timeout=1.0)
    assert sorted(n["queue"] for n in notes) == ["build", "triage"]
