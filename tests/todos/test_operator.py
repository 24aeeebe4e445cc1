"""Operator (Board) variants: checked by "the human owns the endpoint", never fenced."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from switchboard.lib.errors import LeaseConflict, TodoNotFound
from tests.base import Personas
from tests.reach import OWNER, claimed, expire_lease, make_retry_due, new_todo
from tests.rows import attempt_rows, db_now, only_attempt, seconds_until, snapshot, todo_row
from todos import lifecycle


def test_operator_claim_opens_an_owner_attempt_without_a_fence(personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id)

    result = lifecycle.operator_claim(
        personas.alice.id, todo.id, lease_ttl_seconds=120, claimant="alice at the Board"
    )

    row = todo_row(todo.id)
    assert (row["state"], row["owner"]) == ("claimed", f"human:{personas.alice.id}")
    assert seconds_until(todo.id, "lease_expires_at") == 120
    attempt = only_attempt(todo.id)
    assert attempt["claimer_kind"] == "owner"
    assert attempt["claimer_endpoint_id"] is None
    assert attempt["owner"] == f"human:{personas.alice.id}"
    assert attempt["claimant"] == "alice at the Board"
    assert attempt["lease_token_hash"] is None
    assert (result.attempt_seq, result.lease_token) == (1, None)


def test_operator_claim_takes_over_a_lapsed_agent_lease(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, require_fence=True).todo.id
    expire_lease(todo_id)

    result = lifecycle.operator_claim(personas.alice.id, todo_id)

    assert result.took_over is True
    agent, human = attempt_rows(todo_id)
    assert (agent["outcome"], agent["disposition"]) == ("lease_expired", "requeued")
    assert (human["claimer_kind"], human["ended_at"]) == ("owner", None)


def test_operator_claim_of_a_live_agent_lease_is_a_conflict(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict):
        lifecycle.operator_claim(personas.alice.id, todo_id)

    assert snapshot(todo_id) == before


def test_operator_complete_finishes_a_todo_an_agent_holds_despite_its_fence(
    personas: Personas,
) -> None:
    todo_id = claimed(personas.endpoint_a.id, require_fence=True).todo.id

    result = lifecycle.operator_complete(
        personas.alice.id, todo_id, result={"by": "alice"}, summary="done by hand"
    )

    row = todo_row(todo_id)
    assert (row["state"], row["result"], row["owner"]) == ("completed", {"by": "alice"}, None)
    attempt = only_attempt(todo_id)
    assert (attempt["outcome"], attempt["disposition"]) == ("completed", "done")
    assert attempt["summary"] == "done by hand"
    assert attempt["owner"] == OWNER  # the attempt stays the agent's
    assert result.attempt_seq == 1


def test_operator_fail_schedules_a_retry_for_a_todo_an_agent_holds(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id, require_fence=True).todo.id

    result = lifecycle.operator_fail(personas.alice.id, todo_id, retry_after_seconds=60)

    assert todo_row(todo_id)["state"] == "failed"
    assert seconds_until(todo_id, "next_retry_at") == 60
    assert only_attempt(todo_id)["disposition"] == "retry_scheduled"
    assert result.dead_letter is False


def test_operator_fail_not_retryable_dead_letters(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id

    result = lifecycle.operator_fail(personas.alice.id, todo_id, retryable=False, summary="stop")

    assert result.dead_letter is True
    attempt = only_attempt(todo_id)
    assert (attempt["outcome"], attempt["disposition"], attempt["summary"]) == (
        "failed",
        "dead_lettered",
        "stop",
    )


def test_operator_release_requeues_a_todo_an_agent_holds(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id, require_fence=True).todo.id

    lifecycle.operator_release(personas.alice.id, todo_id, summary="let someone else try")

    row = todo_row(todo_id)
    assert (row["state"], row["owner"]) == ("pending", None)
    attempt = only_attempt(todo_id)
    assert (attempt["outcome"], attempt["disposition"]) == ("released", "requeued")
    assert attempt["summary"] == "let someone else try"


def test_operator_extend_lengthens_a_lease_an_agent_holds(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id, require_fence=True, lease_ttl_seconds=30).todo.id

    lifecycle.operator_extend(personas.alice.id, todo_id, lease_ttl_seconds=3600)

    assert seconds_until(todo_id, "lease_expires_at") == 3600
    row = todo_row(todo_id)
    assert (row["state"], row["owner"]) == ("claimed", OWNER)
    attempt = only_attempt(todo_id)
    assert attempt["last_heartbeat_at"] == db_now()
    assert attempt["lease_expires_at"] == row["lease_expires_at"]


OPERATOR_CALLS: list[tuple[str, Callable[[int, str], Any]]] = [
    ("claim", lambda h, t: lifecycle.operator_claim(h, t)),
    ("complete", lambda h, t: lifecycle.operator_complete(h, t, summary="x")),
    ("fail", lambda h, t: lifecycle.operator_fail(h, t)),
    ("release", lambda h, t: lifecycle.operator_release(h, t)),
    ("extend", lambda h, t: lifecycle.operator_extend(h, t, lease_ttl_seconds=600)),
    ("retry", lambda h, t: lifecycle.operator_retry(h, t)),
    ("cancel", lambda h, t: lifecycle.operator_cancel(h, t)),
]


@pytest.mark.parametrize(("name", "call"), OPERATOR_CALLS, ids=[n for n, _ in OPERATOR_CALLS])
def test_bobs_operator_calls_on_alices_todo_are_not_found(
    personas: Personas, name: str, call: Callable[[int, str], Any]
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    if name in ("claim", "retry"):
        # Put the todo where alice's own call would succeed, so only the scope refuses bob.
        lifecycle.fail(ep, todo_id, owner=OWNER, retryable=name == "claim")
        if name == "claim":
            make_retry_due(todo_id)
    before = snapshot(todo_id)

    with pytest.raises(TodoNotFound):
        call(personas.bob.id, todo_id)

    assert snapshot(todo_id) == before
    call(personas.alice.id, todo_id)  # the same call from the owner goes through
    assert snapshot(todo_id) != before


@pytest.mark.parametrize(
    ("name", "call"),
    [c for c in OPERATOR_CALLS if c[0] in ("complete", "fail", "release", "extend")],
)
def test_operator_reports_on_a_pending_todo_are_conflicts(
    personas: Personas, name: str, call: Callable[[int, str], Any]
) -> None:
    todo = new_todo(personas.endpoint_a.id)
    before = snapshot(todo.id)

    with pytest.raises(LeaseConflict) as excinfo:
        call(personas.alice.id, todo.id)

    assert excinfo.value.transition == f"operator_{name}"
    assert snapshot(todo.id) == before
