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


def test_the_release_of_the_last_allowed_attempt_dead_letters(personas: Personas) -> None:
    """A release spends the attempt its claim opened, like a fail without backoff: with the
    budget spent it dead-letters instead of requeueing (docs/decisions/0012-release-budget.md)."""
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, max_attempts=2).todo.id
    assert lifecycle.release(ep, todo_id, owner=OWNER).todo.state == "pending"
    lifecycle.claim(ep, todo_id, owner=OWNER)

    result = lifecycle.release(ep, todo_id, owner=OWNER, summary="still not mine")

    assert (result.todo.state, result.todo.dead_letter, result.attempt_seq) == ("failed", True, 2)
    row = todo_row(todo_id)
    assert (row["attempt"], row["max_attempts"], row["next_retry_at"]) == (2, 2, None)
    assert row["finished_at"] == db_now() and row["owner"] is None
    last = attempt_rows(todo_id)[-1]
    assert (last["outcome"], last["disposition"]) == ("released", "dead_lettered")
    assert lifecycle.claim_next(ep, ["default"], owner=OWNER) is None


def test_a_release_loop_ends_and_never_shows_an_attempt_past_the_budget(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep, max_attempts=4).id
    seen = []

    while (claim := lifecycle.claim_next(ep, ["default"], owner=OWNER)) is not None:
        seen.append((claim.todo.attempt, claim.todo.max_attempts))
        assert len(seen) <= 4
        lifecycle.release(ep, todo_id, owner=OWNER)

    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert todo_row(todo_id)["state"] == "failed"
    assert [a["disposition"] for a in attempt_rows(todo_id)] == ["requeued"] * 3 + ["dead_lettered"]


def test_an_operator_release_of_the_last_attempt_dead_letters_too(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, max_attempts=1).todo.id

    result = lifecycle.operator_release(personas.alice.id, todo_id, summary="give up")

    assert (result.todo.state, result.todo.dead_letter) == ("failed", True)
    assert attempt_rows(todo_id)[-1]["disposition"] == "dead_lettered"
    # The owner may still retry it, with a fresh budget.
    assert lifecycle.retry(personas.alice.id, todo_id).todo.state == "pending"
