"""release: the holder gives the todo back; the attempt closes released/requeued, not refunded."""

from __future__ import annotations

import pytest

from switchboard.lib.errors import LeaseConflict, TodoNotFound
from tests.base import Personas
from tests.reach import OWNER, claimed, new_todo
from tests.rows import attempt_rows, db_now, only_attempt, snapshot, todo_row
from todos import lifecycle


def test_release_returns_the_todo_to_pending_and_closes_the_attempt(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    result = lifecycle.release(ep, todo_id, owner=OWNER, summary="out of time")

    row = todo_row(todo_id)
    assert row["state"] == "pending"
    assert (row["owner"], row["lease_expires_at"], row["finished_at"]) == (None, None, None)
    assert row["attempt"] == 1  # the budget is not refunded
    attempt = only_attempt(todo_id)
    assert (attempt["outcome"], attempt["disposition"]) == ("released", "requeued")
    assert attempt["ended_at"] == db_now()
    assert attempt["summary"] == "out of time"
    assert result.attempt_seq == 1
    assert result.todo.state == "pending"


def test_the_claim_after_a_release_counts_another_attempt(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.release(ep, todo_id, owner=OWNER)

    result = lifecycle.claim_next(ep, ["default"], owner="worker-2")

    assert result is not None and result.todo.id == todo_id
    assert (todo_row(todo_id)["attempt"], result.attempt_seq) == (2, 2)
    assert [a.outcome for a in result.prior_attempts] == ["released"]
    assert [(a["seq"], a["ended_at"] is None) for a in attempt_rows(todo_id)] == [
        (1, False),
        (2, True),
    ]


def test_release_by_another_owner_is_a_conflict_and_changes_nothing(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict) as excinfo:
        lifecycle.release(ep, todo_id, owner="someone-else")

    assert excinfo.value.transition == "release"
    assert snapshot(todo_id) == before


def test_release_of_a_pending_todo_is_a_conflict(personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id)
    before = snapshot(todo.id)

    with pytest.raises(LeaseConflict):
        lifecycle.release(personas.endpoint_a.id, todo.id, owner=OWNER)

    assert snapshot(todo.id) == before


def test_release_from_a_foreign_endpoint_is_not_found(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id
    before = snapshot(todo_id)

    with pytest.raises(TodoNotFound):
        lifecycle.release(personas.endpoint_b.id, todo_id, owner=OWNER)

    assert snapshot(todo_id) == before
