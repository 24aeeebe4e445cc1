"""cancel: a human (Board) or the endpoint (A2A) cancels an unfinished todo."""

from __future__ import annotations

import pytest

from switchboard.lib.errors import LeaseConflict, TodoNotFound
from switchboard.scope import Scope
from tests.base import Personas
from tests.reach import OWNER, claimed, new_todo
from tests.rows import attempt_rows, db_now, only_attempt, snapshot, todo_row
from todos import lifecycle


def test_cancel_of_a_claimed_todo_closes_its_attempt_canceled(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    result = lifecycle.cancel(Scope.of_human(personas.alice.id), todo_id, reason="duplicate")

    row = todo_row(todo_id)
    assert row["state"] == "canceled"
    assert (row["owner"], row["lease_expires_at"], row["next_retry_at"]) == (None, None, None)
    assert row["finished_at"] == db_now()
    attempt = only_attempt(todo_id)
    assert (attempt["outcome"], attempt["disposition"]) == ("canceled", "canceled")
    assert attempt["ended_at"] == db_now()
    assert attempt["summary"] == "duplicate"
    assert result.attempt_seq == 1


def test_cancel_of_a_pending_todo_touches_no_attempt(personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id)

    result = lifecycle.operator_cancel(personas.alice.id, todo.id)

    assert todo_row(todo.id)["state"] == "canceled"
    assert attempt_rows(todo.id) == []
    assert result.attempt_seq is None


def test_cancel_of_a_todo_awaiting_its_retry_leaves_the_closed_attempt(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.fail(ep, todo_id, owner=OWNER)
    attempts_before = attempt_rows(todo_id)

    lifecycle.operator_cancel(personas.alice.id, todo_id, reason="give up")

    row = todo_row(todo_id)
    assert (row["state"], row["next_retry_at"]) == ("canceled", None)
    assert attempt_rows(todo_id) == attempts_before


def test_cancel_of_an_interrupted_todo_closes_its_attempt(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.interrupt(ep, todo_id, owner=OWNER, state="input-required")

    lifecycle.operator_cancel(personas.alice.id, todo_id)

    assert todo_row(todo_id)["state"] == "canceled"
    attempt = only_attempt(todo_id)
    assert (attempt["outcome"], attempt["disposition"]) == ("canceled", "canceled")


def test_the_endpoint_may_cancel_its_own_todo(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    lifecycle.cancel(Scope.of_endpoint(ep), todo_id, reason="caller withdrew")

    assert todo_row(todo_id)["state"] == "canceled"
    assert only_attempt(todo_id)["outcome"] == "canceled"


@pytest.mark.parametrize("final", ["completed", "dead_lettered", "canceled"])
def test_cancel_of_a_finished_todo_is_a_conflict(personas: Personas, final: str) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    if final == "completed":
        lifecycle.complete(ep, todo_id, owner=OWNER)
    elif final == "dead_lettered":
        lifecycle.fail(ep, todo_id, owner=OWNER, retryable=False)
    else:
        lifecycle.operator_cancel(personas.alice.id, todo_id)
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict) as excinfo:
        lifecycle.operator_cancel(personas.alice.id, todo_id)

    assert excinfo.value.transition == "cancel"
    assert snapshot(todo_id) == before


def test_cancel_outside_the_callers_scope_is_not_found(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id
    before = snapshot(todo_id)

    with pytest.raises(TodoNotFound):
        lifecycle.operator_cancel(personas.bob.id, todo_id)
    with pytest.raises(TodoNotFound):
        lifecycle.cancel(Scope.of_endpoint(personas.endpoint_b.id), todo_id)

    assert snapshot(todo_id) == before
