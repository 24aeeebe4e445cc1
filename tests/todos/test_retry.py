"""retry (human): a failed, canceled or rejected todo goes back to pending with a fresh budget."""

from __future__ import annotations

from uuid import UUID

import pytest

from switchboard.lib.errors import LeaseConflict, TodoNotFound
from tests.base import Personas
from tests.reach import OWNER, claimed, new_todo
from tests.rows import attempt_rows, snapshot, todo_row
from todos import lifecycle


def _dead_lettered(ep: UUID) -> str:
    todo_id = claimed(ep, max_attempts=2).todo.id
    lifecycle.fail(ep, todo_id, owner=OWNER, result={"exit": 2}, retryable=False)
    return todo_id


def test_retry_resets_the_budget_and_clears_the_result(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = _dead_lettered(ep)
    attempts_before = attempt_rows(todo_id)

    result = lifecycle.retry(personas.alice.id, todo_id)

    row = todo_row(todo_id)
    assert row["state"] == "pending"
    assert row["attempt"] == 0
    assert (row["result"], row["next_retry_at"], row["finished_at"]) == (None, None, None)
    assert row["attempts_total"] == 1  # kept: attempt seqs never repeat
    assert attempt_rows(todo_id) == attempts_before  # no lease ends here
    assert result.attempt_seq is None
    assert result.todo.state == "pending"


def test_the_claim_after_a_retry_continues_the_attempt_sequence(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = _dead_lettered(ep)
    lifecycle.retry(personas.alice.id, todo_id)

    result = lifecycle.claim_next(ep, ["default"], owner=OWNER)

    assert result is not None and result.todo.id == todo_id
    assert (result.attempt_seq, result.attempts_total) == (2, 2)
    row = todo_row(todo_id)
    assert (row["attempt"], row["attempts_total"]) == (1, 2)
    assert [(a["seq"], a["attempt"]) for a in attempt_rows(todo_id)] == [(1, 1), (2, 1)]
    assert [a.disposition for a in result.prior_attempts] == ["dead_lettered"]


def test_retry_brings_back_a_canceled_todo(personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id)
    lifecycle.operator_cancel(personas.alice.id, todo.id)

    lifecycle.retry(personas.alice.id, todo.id)

    assert todo_row(todo.id)["state"] == "pending"


def test_retry_brings_back_a_rejected_todo(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.reject(ep, todo_id, owner=OWNER, summary="not for me")

    lifecycle.operator_retry(personas.alice.id, todo_id)

    row = todo_row(todo_id)
    assert (row["state"], row["attempt"]) == ("pending", 0)


def test_retry_brings_a_failed_todo_back_before_its_retry_is_due(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.fail(ep, todo_id, owner=OWNER)

    lifecycle.retry(personas.alice.id, todo_id)

    row = todo_row(todo_id)
    assert (row["state"], row["attempt"], row["next_retry_at"]) == ("pending", 0, None)


@pytest.mark.parametrize("state", ["pending", "claimed", "completed"])
def test_retry_of_an_unfinished_or_completed_todo_is_a_conflict(
    personas: Personas, state: str
) -> None:
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep).id
    if state != "pending":
        lifecycle.claim(ep, todo_id, owner=OWNER)
    if state == "completed":
        lifecycle.complete(ep, todo_id, owner=OWNER)
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict) as excinfo:
        lifecycle.retry(personas.alice.id, todo_id)

    assert excinfo.value.transition == "retry"
    assert snapshot(todo_id) == before


def test_retry_by_a_human_who_does_not_own_the_endpoint_is_not_found(
    personas: Personas,
) -> None:
    todo_id = _dead_lettered(personas.endpoint_a.id)
    before = snapshot(todo_id)

    with pytest.raises(TodoNotFound):
        lifecycle.retry(personas.bob.id, todo_id)

    assert snapshot(todo_id) == before
