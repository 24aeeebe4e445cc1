"""requeue_due_retries: failed todos whose retry is due go back to pending; no attempt changes."""

from __future__ import annotations

from uuid import UUID

from tests.base import Personas
from tests.reach import OWNER, claimed, make_retry_due
from tests.rows import attempt_rows, snapshot, todo_row
from todos import lifecycle


def _failed(ep: UUID, *, retryable: bool = True) -> str:
    todo_id = claimed(ep).todo.id
    lifecycle.fail(
        ep, todo_id, owner=OWNER, result={"exit": 1}, summary="boom", retryable=retryable
    )
    return todo_id


def test_requeue_due_retries_moves_due_todos_to_pending_and_returns_their_ids(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    due = _failed(ep)
    make_retry_due(due)
    attempts_before = attempt_rows(due)

    ids = lifecycle.requeue_due_retries()

    assert ids == (due,)
    row = todo_row(due)
    assert (row["state"], row["next_retry_at"], row["finished_at"]) == ("pending", None, None)
    assert row["attempt"] == 1
    assert row["result"] == {"exit": 1}  # kept for the next claimer; only a human retry clears it
    assert attempt_rows(due) == attempts_before
    assert attempts_before[0]["disposition"] == "retry_scheduled"


def test_requeue_due_retries_leaves_retries_not_yet_due_and_dead_letters(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    not_due = _failed(ep)
    dead = _failed(ep, retryable=False)
    before = [snapshot(not_due), snapshot(dead)]

    assert lifecycle.requeue_due_retries() == ()

    assert [snapshot(not_due), snapshot(dead)] == before


def test_requeue_due_retries_stops_at_its_limit(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    ids = [_failed(ep) for _ in range(3)]
    for todo_id in ids:
        make_retry_due(todo_id)

    first = lifecycle.requeue_due_retries(limit=2)

    assert len(first) == 2
    (left,) = [i for i in ids if i not in first]
    assert todo_row(left)["state"] == "failed"
    assert lifecycle.requeue_due_retries(limit=2) == (left,)


def test_a_requeued_retry_is_claimed_as_the_next_attempt(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = _failed(ep)
    make_retry_due(todo_id)
    lifecycle.requeue_due_retries()

    result = lifecycle.claim_next(ep, ["default"], owner="worker-2")

    assert result is not None and result.todo.id == todo_id
    assert (result.attempt_seq, todo_row(todo_id)["attempt"]) == (2, 2)
    assert [a.summary for a in result.prior_attempts] == ["boom"]
