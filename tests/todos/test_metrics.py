"""Metrics: transitions and closed attempts are counted once the transaction commits."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
from django.db import transaction
from prometheus_client import REGISTRY

from switchboard.lib.errors import LeaseConflict
from tests.base import Personas
from tests.reach import OWNER, claimed, expire_lease, make_retry_due, new_todo
from todos import lifecycle

Capture = Callable[..., AbstractContextManager[list[Callable[[], Any]]]]


def transitions(name: str, result: str = "ok") -> float:
    value = REGISTRY.get_sample_value(
        "switchboard_todo_transitions_total", {"transition": name, "outcome": result}
    )
    return value or 0.0


def closed(outcome: str, disposition: str) -> float:
    value = REGISTRY.get_sample_value(
        "switchboard_todo_attempts_closed_total",
        {"outcome": outcome, "disposition": disposition},
    )
    return value or 0.0


def test_create_is_counted_when_its_transaction_commits(
    personas: Personas, django_capture_on_commit_callbacks: Capture
) -> None:
    before = transitions("create")

    with django_capture_on_commit_callbacks(execute=True):
        new_todo(personas.endpoint_a.id)
        assert transitions("create") == before  # not yet: nothing has committed

    assert transitions("create") == before + 1


def test_a_rolled_back_transition_is_not_counted(
    personas: Personas, django_capture_on_commit_callbacks: Capture
) -> None:
    before = transitions("create")

    def create_then_roll_back() -> None:
        with transaction.atomic():
            new_todo(personas.endpoint_a.id)
            raise RuntimeError("roll back")

    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(RuntimeError),
    ):
        create_then_roll_back()

    assert callbacks == []
    assert transitions("create") == before


Drive = Callable[[Personas, str], Any]


def _take_over(p: Personas, todo_id: str) -> None:
    expire_lease(todo_id)
    result = lifecycle.claim_next(p.endpoint_a.id, ["default"], owner="worker-2")
    assert result is not None and result.took_over


def _reap(todo_id: str) -> None:
    expire_lease(todo_id)
    assert lifecycle.reap().requeued == (todo_id,)


# name → (drive it on a todo claimed by OWNER (max_attempts 2), transition label, closed pair)
CASES: dict[str, tuple[Drive, tuple[str, str], tuple[str, str] | None]] = {
    "complete": (
        lambda p, t: lifecycle.complete(p.endpoint_a.id, t, owner=OWNER),
        ("complete", "ok"),
        ("completed", "done"),
    ),
    "fail": (
        lambda p, t: lifecycle.fail(p.endpoint_a.id, t, owner=OWNER),
        ("fail", "ok"),
        ("failed", "retry_scheduled"),
    ),
    "fail dead": (
        lambda p, t: lifecycle.fail(p.endpoint_a.id, t, owner=OWNER, retryable=False),
        ("fail", "ok"),
        ("failed", "dead_lettered"),
    ),
    "release": (
        lambda p, t: lifecycle.release(p.endpoint_a.id, t, owner=OWNER),
        ("release", "ok"),
        ("released", "requeued"),
    ),
    "takeover": (
        lambda p, t: _take_over(p, t),
        ("claim_next", "ok"),
        ("lease_expired", "requeued"),
    ),
    "reap": (
        lambda p, t: _reap(t),
        ("reap", "requeued"),
        ("reaped", "requeued"),
    ),
    "cancel": (
        lambda p, t: lifecycle.operator_cancel(p.alice.id, t),
        ("cancel", "ok"),
        ("canceled", "canceled"),
    ),
    "reject": (
        lambda p, t: lifecycle.reject(p.endpoint_a.id, t, owner=OWNER),
        ("reject", "ok"),
        ("failed", "dead_lettered"),
    ),
    "heartbeat": (
        lambda p, t: lifecycle.heartbeat(p.endpoint_a.id, t, owner=OWNER),
        ("heartbeat", "ok"),
        None,
    ),
    "operator complete": (
        lambda p, t: lifecycle.operator_complete(p.alice.id, t),
        ("operator_complete", "ok"),
        ("completed", "done"),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_transition_and_the_attempt_it_closes_are_counted_after_commit(
    personas: Personas, django_capture_on_commit_callbacks: Capture, name: str
) -> None:
    drive, label, pair = CASES[name]
    with django_capture_on_commit_callbacks(execute=True):
        todo_id = claimed(personas.endpoint_a.id, max_attempts=2).todo.id
    all_pairs = [
        (o, d)
        for o in ("completed", "failed", "released", "lease_expired", "reaped", "canceled")
        for d in ("done", "retry_scheduled", "requeued", "dead_lettered", "canceled")
    ]
    before_t = transitions(*label)
    before_c = {p: closed(*p) for p in all_pairs}

    with django_capture_on_commit_callbacks(execute=True):
        drive(personas, todo_id)
        assert transitions(*label) == before_t

    assert transitions(*label) == before_t + 1
    expected = {p: before_c[p] + (1 if p == pair else 0) for p in all_pairs}
    assert {p: closed(*p) for p in all_pairs} == expected


def test_reaping_a_spent_lease_counts_a_dead_letter(
    personas: Personas, django_capture_on_commit_callbacks: Capture
) -> None:
    todo_id = claimed(personas.endpoint_a.id, max_attempts=1).todo.id
    expire_lease(todo_id)
    before = (transitions("reap", "dead_lettered"), closed("reaped", "dead_lettered"))

    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.reap()

    assert (transitions("reap", "dead_lettered"), closed("reaped", "dead_lettered")) == (
        before[0] + 1,
        before[1] + 1,
    )


def test_canceling_a_pending_todo_closes_no_attempt(
    personas: Personas, django_capture_on_commit_callbacks: Capture
) -> None:
    todo = new_todo(personas.endpoint_a.id)
    before = (transitions("cancel"), closed("canceled", "canceled"))

    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.operator_cancel(personas.alice.id, todo.id)

    assert (transitions("cancel"), closed("canceled", "canceled")) == (before[0] + 1, before[1])


def test_revoke_counts_the_attempts_it_closed_not_the_todos_it_dead_lettered(
    personas: Personas, django_capture_on_commit_callbacks: Capture
) -> None:
    ep = personas.endpoint_a.id
    new_todo(ep)  # pending: dead-lettered, but it has no attempt to close
    claimed(ep)  # in flight: its attempt closes revoked/dead_lettered
    before = (transitions("revoke_endpoint"), closed("revoked", "dead_lettered"))

    with django_capture_on_commit_callbacks(execute=True):
        result = lifecycle.revoke_endpoint(personas.alice.id, ep)

    assert len(result.dead_lettered) == 2
    assert transitions("revoke_endpoint") == before[0] + 1
    assert closed("revoked", "dead_lettered") == before[1] + 1


def test_a_second_revoke_counts_nothing(
    personas: Personas, django_capture_on_commit_callbacks: Capture
) -> None:
    ep = personas.endpoint_a.id
    claimed(ep)
    lifecycle.revoke_endpoint(personas.alice.id, ep)
    before = (transitions("revoke_endpoint"), closed("revoked", "dead_lettered"))

    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.revoke_endpoint(personas.alice.id, ep)

    assert (transitions("revoke_endpoint"), closed("revoked", "dead_lettered")) == before


def test_a_miss_is_counted_at_once(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id
    before = transitions("complete", "miss")

    with pytest.raises(LeaseConflict):
        lifecycle.complete(personas.endpoint_a.id, todo_id, owner="someone-else")

    assert transitions("complete", "miss") == before + 1


def test_an_empty_claim_is_counted(personas: Personas) -> None:
    before = transitions("claim_next", "empty")

    assert lifecycle.claim_next(personas.endpoint_a.id, ["default"], owner=OWNER) is None

    assert transitions("claim_next", "empty") == before + 1


def test_requeue_due_retries_counts_each_todo(
    personas: Personas, django_capture_on_commit_callbacks: Capture
) -> None:
    ep = personas.endpoint_a.id
    ids = [claimed(ep).todo.id for _ in range(2)]
    for todo_id in ids:
        lifecycle.fail(ep, todo_id, owner=OWNER)
        make_retry_due(todo_id)
    before = transitions("requeue_due_retries")

    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.requeue_due_retries()

    assert transitions("requeue_due_retries") == before + 2


@pytest.mark.django_db(transaction=True)
def test_an_autocommit_transition_is_counted_as_it_returns(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    before = (transitions("complete"), closed("completed", "done"))

    lifecycle.complete(ep, todo_id, owner=OWNER)

    assert (transitions("complete"), closed("completed", "done")) == (
        before[0] + 1,
        before[1] + 1,
    )
