"""claim_next over rows another transaction holds locked (todos/sql/_claim_next_cand.sql).

A claim on several queues reads up to 8 heads of each without locks and locks the oldest it can;
when 8 heads of a queue are locked by someone else, a row it did not read may be older than any
it could lock, and it walks the queues instead. These tests hold the locks on a raw connection
of their own, so they commit for real (``transaction=True``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from uuid import UUID

import pytest

from tests.base import Personas
from tests.concurrency.harness import raw_connection
from tests.reach import new_todo, set_created_at
from tests.rows import todo_row
from todos import lifecycle

HEADS = 8  # as in _claim_next_cand.sql
OWNER = "worker-1"


def _queue(ep: UUID, queue: str, n: int, oldest_seconds_ago: float) -> list[str]:
    """``n`` pending todos on ``queue``, oldest first, a second apart."""
    ids = []
    for i in range(n):
        todo = new_todo(ep, queue)
        set_created_at(todo.id, oldest_seconds_ago - i)
        ids.append(todo.id)
    return ids


@contextmanager
def locked_by_another_transaction(ids: list[str]) -> Iterator[None]:
    with raw_connection() as conn:
        rows = conn.execute("SELECT id FROM todos WHERE id = ANY(%s) FOR UPDATE", [ids]).fetchall()
        assert len(rows) == len(ids)
        yield
        conn.rollback()


def _claim(ep: UUID, queues: list[str]) -> str | None:
    result = lifecycle.claim_next(ep, queues, owner=OWNER)
    return None if result is None else result.todo.id


@pytest.mark.django_db(transaction=True)
def test_a_claim_on_several_queues_takes_the_oldest_row_beyond_a_queues_locked_heads(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    busy = _queue(ep, "busy", HEADS + 2, oldest_seconds_ago=100)
    (newer,) = _queue(ep, "quiet", 1, oldest_seconds_ago=10)

    with locked_by_another_transaction(busy[:HEADS]):
        # The quiet queue's head is the only head it can lock, but the busy queue's ninth row,
        # which it did not read as a head, is older: that one is the claim.
        assert _claim(ep, ["busy", "quiet"]) == busy[HEADS]
        assert _claim(ep, ["quiet", "busy"]) == busy[HEADS + 1]
        assert _claim(ep, ["busy", "quiet"]) == newer
        assert _claim(ep, ["busy", "quiet"]) is None

    assert todo_row(busy[0])["state"] == "pending"
    assert todo_row(newer)["state"] == "claimed"


@pytest.mark.django_db(transaction=True)
def test_a_claim_on_several_queues_takes_the_oldest_head_it_can_lock(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    first = _queue(ep, "first", 3, oldest_seconds_ago=100)
    second = _queue(ep, "second", 3, oldest_seconds_ago=99.5)  # between "first"'s rows

    with locked_by_another_transaction([first[0], second[0]]):
        taken = [_claim(ep, ["first", "second"]) for _ in range(5)]

    assert taken == [first[1], second[1], first[2], second[2], None]


@pytest.mark.django_db(transaction=True)
def test_a_claim_on_one_queue_steps_over_any_number_of_locked_rows(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    busy = _queue(ep, "busy", HEADS * 2 + 1, oldest_seconds_ago=100)

    with locked_by_another_transaction(busy[:-1]):
        assert _claim(ep, ["busy"]) == busy[-1]
        assert _claim(ep, ["busy"]) is None
