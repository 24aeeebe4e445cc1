"""claim_next and claim: every arm of the claimable predicate, the takeover, and the result."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard.lib.errors import InvalidInput, LeaseConflict, TodoNotFound
from switchboard.lib.sql import fetch_all
from tests.base import Personas
from tests.reach import (
    OWNER,
    claimed_and_released,
    expire_lease,
    make_retry_due,
    new_todo,
    set_created_at,
)
from tests.rows import (
    attempt_rows,
    db_now,
    only_attempt,
    open_attempts,
    seconds_until,
    snapshot,
    todo_row,
)
from todos import lifecycle


def test_claim_next_takes_a_pending_todo_and_opens_its_first_attempt(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo = new_todo(ep)

    result = lifecycle.claim_next(
        ep, ["default"], owner=OWNER, lease_ttl_seconds=120, claimant="ci/run-1", session="s-1"
    )

    assert result is not None
    row = todo_row(todo.id)
    assert (row["state"], row["owner"]) == ("claimed", OWNER)
    assert (row["attempt"], row["attempts_total"]) == (1, 1)
    assert seconds_until(todo.id, "lease_expires_at") == 120
    assert row["claimed_at"] == db_now()
    attempt = only_attempt(todo.id)
    assert (attempt["seq"], attempt["attempt"]) == (1, 1)
    assert attempt["claimer_kind"] == "endpoint"
    assert attempt["claimer_endpoint_id"] == ep
    assert (attempt["claimer_session"], attempt["claimant"]) == ("s-1", "ci/run-1")
    assert attempt["owner"] == OWNER
    assert attempt["claimed_at"] == db_now()
    assert attempt["lease_expires_at"] == row["lease_expires_at"]
    assert attempt["last_heartbeat_at"] is None
    assert attempt["ended_at"] is None
    assert (attempt["outcome"], attempt["disposition"]) == (None, None)
    assert attempt["lease_token_hash"] is None
    assert (result.todo.id, result.attempt_seq, result.attempts_total) == (todo.id, 1, 1)
    assert result.prior_attempts == ()
    assert result.took_over is False
    assert result.lease_token is None


def test_claim_next_uses_the_default_lease_when_none_is_named(personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id)

    lifecycle.claim_next(personas.endpoint_a.id, ["default"], owner=OWNER)

    assert seconds_until(todo.id, "lease_expires_at") == 300


def test_claim_next_returns_none_and_writes_nothing_when_the_queue_is_empty(
    personas: Personas,
) -> None:
    assert lifecycle.claim_next(personas.endpoint_a.id, ["default"], owner=OWNER) is None

    assert fetch_all("SELECT 1 FROM todo_attempts", {}) == []


def test_takeover_closes_the_dead_attempt(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    first = lifecycle.claim(ep, new_todo(ep).id, owner="worker-dead", claimant="dead one")
    todo_id = first.todo.id
    expire_lease(todo_id)

    result = lifecycle.claim_next(ep, ["default"], owner="worker-new", lease_ttl_seconds=60)

    assert result is not None and result.todo.id == todo_id
    row = todo_row(todo_id)
    assert (row["state"], row["owner"]) == ("claimed", "worker-new")
    assert (row["attempt"], row["attempts_total"]) == (2, 2)
    assert seconds_until(todo_id, "lease_expires_at") == 60
    dead, new = attempt_rows(todo_id)
    assert (dead["seq"], dead["owner"]) == (1, "worker-dead")
    assert dead["ended_at"] == db_now()
    assert (dead["outcome"], dead["disposition"]) == ("lease_expired", "requeued")
    assert (new["seq"], new["attempt"], new["owner"]) == (2, 2, "worker-new")
    assert new["ended_at"] is None
    assert result.took_over is True
    assert result.attempt_seq == 2
    assert [a.seq for a in result.prior_attempts] == [1]
    assert result.prior_attempts[0].died is True
    assert result.prior_attempts[0].outcome == "lease_expired"


def test_claim_by_id_takes_over_a_lapsed_lease_too(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = lifecycle.claim(ep, new_todo(ep).id, owner="worker-dead").todo.id
    expire_lease(todo_id)

    result = lifecycle.claim(ep, todo_id, owner="worker-new")

    assert result.took_over is True
    assert [(a["seq"], a["outcome"]) for a in attempt_rows(todo_id)] == [
        (1, "lease_expired"),
        (2, None),
    ]
    assert len(open_attempts(todo_id)) == 1


def test_a_live_lease_is_not_taken_over(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = lifecycle.claim(ep, new_todo(ep).id, owner="worker-1").todo.id
    before = snapshot(todo_id)

    assert lifecycle.claim_next(ep, ["default"], owner="worker-2") is None
    with pytest.raises(LeaseConflict):
        lifecycle.claim(ep, todo_id, owner="worker-2")

    assert snapshot(todo_id) == before


def test_a_lapsed_lease_with_its_budget_spent_is_not_taken_over(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = lifecycle.claim(ep, new_todo(ep, max_attempts=1).id, owner="worker-1").todo.id
    expire_lease(todo_id)
    before = snapshot(todo_id)

    assert lifecycle.claim_next(ep, ["default"], owner="worker-2") is None
    with pytest.raises(LeaseConflict):
        lifecycle.claim(ep, todo_id, owner="worker-2")

    assert snapshot(todo_id) == before


def test_claim_next_takes_a_failed_todo_whose_retry_is_due(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = lifecycle.claim(ep, new_todo(ep).id, owner="worker-1").todo.id
    lifecycle.fail(ep, todo_id, owner="worker-1", summary="flaky")
    make_retry_due(todo_id)

    result = lifecycle.claim_next(ep, ["default"], owner="worker-2")

    assert result is not None and result.todo.id == todo_id
    row = todo_row(todo_id)
    assert (row["state"], row["owner"], row["attempt"]) == ("claimed", "worker-2", 2)
    assert row["next_retry_at"] is None
    failed, new = attempt_rows(todo_id)
    # The failed attempt was closed by fail, and the claim leaves it as it was.
    assert (failed["outcome"], failed["disposition"]) == ("failed", "retry_scheduled")
    assert failed["summary"] == "flaky"
    assert (new["seq"], new["ended_at"]) == (2, None)
    assert result.took_over is False
    assert [a.seq for a in result.prior_attempts] == [1]
    assert result.prior_attempts[0].died is False


def test_a_failed_todo_whose_retry_is_not_yet_due_is_not_claimable(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = lifecycle.claim(ep, new_todo(ep).id, owner="worker-1").todo.id
    lifecycle.fail(ep, todo_id, owner="worker-1")
    before = snapshot(todo_id)

    assert lifecycle.claim_next(ep, ["default"], owner="worker-2") is None
    with pytest.raises(LeaseConflict):
        lifecycle.claim(ep, todo_id, owner="worker-2")

    assert snapshot(todo_id) == before


def test_a_failed_todo_with_a_due_retry_but_no_budget_is_not_claimable(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo_id = lifecycle.claim(ep, new_todo(ep, max_attempts=3).id, owner="worker-1").todo.id
    lifecycle.fail(ep, todo_id, owner="worker-1")
    make_retry_due(todo_id)
    # No transition schedules a retry without budget; lowering the budget by hand is the only
    # way to reach the arm's "attempt < max_attempts" guard.
    fetch_all("UPDATE todos SET max_attempts = attempt WHERE id = %(id)s", {"id": todo_id})
    before = snapshot(todo_id)

    assert lifecycle.claim_next(ep, ["default"], owner="worker-2") is None
    with pytest.raises(LeaseConflict):
        lifecycle.claim(ep, todo_id, owner="worker-2")

    assert snapshot(todo_id) == before


@pytest.mark.parametrize("final", ["completed", "dead_lettered", "canceled"])
def test_a_finished_todo_is_not_claimable(personas: Personas, final: str) -> None:
    ep = personas.endpoint_a.id
    todo_id = lifecycle.claim(ep, new_todo(ep).id, owner="worker-1").todo.id
    if final == "completed":
        lifecycle.complete(ep, todo_id, owner="worker-1")
    elif final == "dead_lettered":
        lifecycle.fail(ep, todo_id, owner="worker-1", retryable=False)
    else:
        lifecycle.operator_cancel(personas.alice.id, todo_id)
    before = snapshot(todo_id)

    assert lifecycle.claim_next(ep, ["default"], owner="worker-2") is None
    with pytest.raises(LeaseConflict):
        lifecycle.claim(ep, todo_id, owner="worker-2")

    assert snapshot(todo_id) == before


def test_claim_next_takes_the_oldest_todo_first(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    middle, newest, oldest = new_todo(ep), new_todo(ep), new_todo(ep)
    set_created_at(middle.id, 20)
    set_created_at(newest.id, 10)
    set_created_at(oldest.id, 30)

    order = []
    for _ in range(3):
        result = lifecycle.claim_next(ep, ["default"], owner=OWNER)
        assert result is not None
        order.append(result.todo.id)

    assert order == [oldest.id, middle.id, newest.id]
    assert all(todo_row(i)["state"] == "claimed" for i in order)


def test_claim_next_takes_an_old_lapsed_lease_before_a_newer_pending_todo(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    old = lifecycle.claim(ep, new_todo(ep).id, owner="worker-dead").todo
    set_created_at(old.id, 60)
    expire_lease(old.id)
    new_todo(ep)

    result = lifecycle.claim_next(ep, ["default"], owner="worker-2")

    assert result is not None and result.todo.id == old.id
    assert result.took_over is True


def test_claim_next_takes_only_the_named_queues(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    other = new_todo(ep, queue="other")
    set_created_at(other.id, 60)
    wanted = new_todo(ep, queue="wanted")
    also = new_todo(ep, queue="also")

    first = lifecycle.claim_next(ep, ["wanted", "also"], owner=OWNER)
    second = lifecycle.claim_next(ep, ["wanted", "also"], owner=OWNER)
    third = lifecycle.claim_next(ep, ["wanted", "also"], owner=OWNER)

    assert first is not None and second is not None and third is None
    assert {first.todo.id, second.todo.id} == {wanted.id, also.id}
    assert todo_row(other.id)["state"] == "pending"
    assert attempt_rows(other.id) == []


def test_claim_next_on_several_queues_takes_the_oldest_across_them(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    # Each queue's todos interleaved in time with the other's, and more than the 8 heads of
    # each queue a several-queue claim reads at once (todos/sql/_claim_next_cand.sql).
    todos = [new_todo(ep, queue=("left", "right")[i % 2]) for i in range(20)]
    for i, todo in enumerate(todos):
        set_created_at(todo.id, 100 - i)
    new_todo(ep, queue="elsewhere")

    order = []
    for _ in range(len(todos) + 1):
        result = lifecycle.claim_next(ep, ["right", "left"], owner=OWNER)
        order.append(None if result is None else result.todo.id)

    assert order == [todo.id for todo in todos] + [None]


def test_claim_next_skips_a_todo_assigned_to_someone_else(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo = new_todo(ep, assignee="worker-9")

    assert lifecycle.claim_next(ep, ["default"], owner="worker-1") is None
    with pytest.raises(LeaseConflict):
        lifecycle.claim(ep, todo.id, owner="worker-1")
    assert todo_row(todo.id)["state"] == "pending"

    result = lifecycle.claim_next(ep, ["default"], owner="worker-9")

    assert result is not None and result.todo.id == todo.id
    assert todo_row(todo.id)["owner"] == "worker-9"


def test_claim_next_never_sees_another_endpoints_todos(personas: Personas) -> None:
    bobs = new_todo(personas.endpoint_b.id)

    assert lifecycle.claim_next(personas.endpoint_a.id, ["default"], owner=OWNER) is None

    assert todo_row(bobs.id)["state"] == "pending"
    assert attempt_rows(bobs.id) == []


def test_claim_by_id_of_a_foreign_todo_is_not_found(personas: Personas) -> None:
    bobs = new_todo(personas.endpoint_b.id)
    before = snapshot(bobs.id)

    with pytest.raises(TodoNotFound):
        lifecycle.claim(personas.endpoint_a.id, bobs.id, owner=OWNER)

    assert snapshot(bobs.id) == before


def test_claim_by_id_of_an_unknown_todo_is_not_found(personas: Personas) -> None:
    with pytest.raises(TodoNotFound):
        lifecycle.claim(personas.endpoint_a.id, "td_" + "a" * 20, owner=OWNER)


def test_claim_by_id_ignores_the_queue(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo = new_todo(ep, queue="anything")

    result = lifecycle.claim(ep, todo.id, owner=OWNER)

    assert result.todo.id == todo.id
    assert todo_row(todo.id)["state"] == "claimed"


def test_a_claim_carries_the_five_newest_closed_attempts_newest_first(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep, max_attempts=10).id
    claimed_and_released(ep, todo_id, 5, summary="not now")
    lifecycle.claim(ep, todo_id, owner="worker-dead")
    expire_lease(todo_id)

    result = lifecycle.claim(ep, todo_id, owner="worker-new")

    assert (result.attempt_seq, result.attempts_total) == (7, 7)
    assert [a.seq for a in result.prior_attempts] == [6, 5, 4, 3, 2]
    newest = result.prior_attempts[0]
    # Closed by this very claim's takeover: the statement's snapshot still saw it open.
    assert (newest.outcome, newest.disposition, newest.died) == (
        "lease_expired",
        "requeued",
        True,
    )
    assert newest.owner == "worker-dead"
    assert newest.ended_at == db_now()
    assert all(a.outcome == "released" and not a.died for a in result.prior_attempts[1:])
    assert all(a.summary == "not now" for a in result.prior_attempts[1:])
    assert all(a.todo_id == todo_id and a.ended_at is not None for a in result.prior_attempts)
    assert len(attempt_rows(todo_id)) == 7


def test_a_claim_after_fewer_than_five_attempts_carries_them_all(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep).id
    claimed_and_released(ep, todo_id, 2, summary="not now")

    result = lifecycle.claim(ep, todo_id, owner=OWNER)

    assert [a.seq for a in result.prior_attempts] == [2, 1]
    assert result.attempts_total == 3


@pytest.mark.parametrize("ttl", [9, 86401, 0, -5, True, "60", 60.0])
def test_a_claim_with_a_bad_lease_ttl_is_invalid_and_writes_nothing(
    personas: Personas, ttl: Any
) -> None:
    ep = personas.endpoint_a.id
    todo = new_todo(ep)
    before = snapshot(todo.id)

    with pytest.raises(InvalidInput) as by_next:
        lifecycle.claim_next(ep, ["default"], owner=OWNER, lease_ttl_seconds=ttl)
    with pytest.raises(InvalidInput) as by_id:
        lifecycle.claim(ep, todo.id, owner=OWNER, lease_ttl_seconds=ttl)

    assert by_next.value.field == by_id.value.field == "lease_ttl_seconds"
    assert snapshot(todo.id) == before


@pytest.mark.parametrize("ttl", [10, 86400])
def test_a_claim_accepts_a_lease_ttl_at_its_bounds(personas: Personas, ttl: int) -> None:
    todo = new_todo(personas.endpoint_a.id)

    lifecycle.claim(personas.endpoint_a.id, todo.id, owner=OWNER, lease_ttl_seconds=ttl)

    assert seconds_until(todo.id, "lease_expires_at") == ttl
    assert open_attempts(todo.id)[0]["lease_expires_at"] == todo_row(todo.id)["lease_expires_at"]


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("queues", {"queues": []}),
        ("queues", {"queues": "default"}),
        ("queues", {"queues": ["default", ""]}),
        ("queues", {"queues": ["de\nfault"]}),
        ("owner", {"owner": ""}),
        ("owner", {"owner": "o" * 257}),
        ("owner", {"owner": "wor\x00ker"}),
        ("claimant", {"claimant": 42}),
    ],
)
def test_claim_next_with_bad_input_is_invalid_and_writes_nothing(
    personas: Personas, field: str, kwargs: dict[str, Any]
) -> None:
    todo = new_todo(personas.endpoint_a.id)
    before = snapshot(todo.id)
    args: dict[str, Any] = {"queues": ["default"], "owner": OWNER, **kwargs}

    with pytest.raises(InvalidInput) as excinfo:
        lifecycle.claim_next(personas.endpoint_a.id, args.pop("queues"), **args)

    assert excinfo.value.field == field
    assert snapshot(todo.id) == before
