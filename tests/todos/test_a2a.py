"""A2A: interrupt (the attempt stays open, never reaped), resume (the human), reject (final)."""

from __future__ import annotations

import pytest

from switchboard.lib.errors import InvalidInput, LeaseConflict, TodoNotFound
from switchboard.lib.sql import fetch_all
from tests.base import Personas
from tests.reach import OWNER, claimed, expire_lease
from tests.rows import db_now, only_attempt, seconds_until, snapshot, todo_row
from todos import lifecycle


@pytest.mark.parametrize("state", ["input-required", "auth-required"])
def test_interrupt_pauses_the_lease_and_keeps_the_attempt_open(
    personas: Personas, state: str
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    result = lifecycle.interrupt(
        ep, todo_id, owner=OWNER, state=state, input_request={"question": "which branch?"}
    )

    row = todo_row(todo_id)
    assert (row["state"], row["owner"], row["lease_expires_at"]) == (state, OWNER, None)
    assert row["input_request"] == {"question": "which branch?"}
    assert row["finished_at"] is None
    attempt = only_attempt(todo_id)
    assert (attempt["ended_at"], attempt["outcome"]) == (None, None)
    assert result.attempt_seq == 1


def test_an_interrupted_todo_is_never_reaped_even_with_an_old_lease(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.interrupt(ep, todo_id, owner=OWNER, state="input-required")
    # Two executes: server-side binding (settings) takes one statement per execute.
    fetch_all(
        "UPDATE todos SET lease_expires_at = now() - interval '1 day' WHERE id = %(id)s",
        {"id": todo_id},
    )
    fetch_all(
        "UPDATE todo_attempts SET lease_expires_at = now() - interval '1 day'"
        " WHERE todo_id = %(id)s",
        {"id": todo_id},
    )
    before = snapshot(todo_id)

    swept = lifecycle.reap()

    assert (swept.requeued, swept.dead_lettered) == ((), ())
    assert lifecycle.claim_next(ep, ["default"], owner="worker-2") is None
    assert snapshot(todo_id) == before


def test_interrupt_to_another_state_is_invalid(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    before = snapshot(todo_id)

    with pytest.raises(InvalidInput) as excinfo:
        lifecycle.interrupt(ep, todo_id, owner=OWNER, state="completed")

    assert excinfo.value.field == "state"
    assert snapshot(todo_id) == before


def test_interrupt_by_another_owner_is_a_conflict(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict):
        lifecycle.interrupt(ep, todo_id, owner="someone-else", state="input-required")

    assert snapshot(todo_id) == before


def test_an_interrupted_todo_takes_no_heartbeat_or_report(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.interrupt(ep, todo_id, owner=OWNER, state="input-required")
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict):
        lifecycle.heartbeat(ep, todo_id, owner=OWNER)
    with pytest.raises(LeaseConflict):
        lifecycle.complete(ep, todo_id, owner=OWNER)

    assert snapshot(todo_id) == before


def test_resume_gives_the_holder_a_new_lease_on_the_same_attempt(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.interrupt(ep, todo_id, owner=OWNER, state="input-required", input_request={"q": 1})

    result = lifecycle.resume(
        personas.alice.id, todo_id, response={"answer": "main"}, lease_ttl_seconds=90
    )

    row = todo_row(todo_id)
    assert (row["state"], row["owner"]) == ("claimed", OWNER)
    assert seconds_until(todo_id, "lease_expires_at") == 90
    assert row["input_request"] == {"q": 1, "response": {"answer": "main"}}
    assert row["attempt"] == 1
    attempt = only_attempt(todo_id)
    assert attempt["ended_at"] is None
    assert attempt["lease_expires_at"] == row["lease_expires_at"]
    assert result.attempt_seq == 1


def test_the_holder_completes_after_a_resume(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.interrupt(ep, todo_id, owner=OWNER, state="auth-required")
    lifecycle.resume(personas.alice.id, todo_id)

    lifecycle.complete(ep, todo_id, owner=OWNER, summary="done after the answer")

    assert todo_row(todo_id)["state"] == "completed"
    assert only_attempt(todo_id)["outcome"] == "completed"


def test_resume_by_a_foreign_human_is_not_found(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.interrupt(ep, todo_id, owner=OWNER, state="input-required")
    before = snapshot(todo_id)

    with pytest.raises(TodoNotFound):
        lifecycle.resume(personas.bob.id, todo_id, response={"answer": "x"})

    assert snapshot(todo_id) == before


def test_resume_of_a_todo_that_is_not_interrupted_is_a_conflict(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict):
        lifecycle.resume(personas.alice.id, todo_id)

    assert snapshot(todo_id) == before


def test_reject_closes_the_attempt_failed_dead_lettered(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    result = lifecycle.reject(
        ep, todo_id, owner=OWNER, result={"why": "out of scope"}, summary="not mine"
    )

    row = todo_row(todo_id)
    assert (row["state"], row["owner"], row["lease_expires_at"]) == ("rejected", None, None)
    assert row["result"] == {"why": "out of scope"}
    assert row["finished_at"] == db_now()
    attempt = only_attempt(todo_id)
    assert (attempt["outcome"], attempt["disposition"]) == ("failed", "dead_lettered")
    assert attempt["summary"] == "not mine"
    assert result.attempt_seq == 1
    assert lifecycle.claim_next(ep, ["default"], owner="worker-2") is None


def test_reject_by_the_holder_of_a_taken_over_lease_is_a_conflict(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, owner="worker-slow").todo.id
    expire_lease(todo_id)
    lifecycle.claim(ep, todo_id, owner="worker-new")
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict):
        lifecycle.reject(ep, todo_id, owner="worker-slow")

    assert snapshot(todo_id) == before


def test_reject_from_a_foreign_endpoint_is_not_found(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id

    with pytest.raises(TodoNotFound):
        lifecycle.reject(personas.endpoint_b.id, todo_id, owner=OWNER)

    assert todo_row(todo_id)["state"] == "claimed"
