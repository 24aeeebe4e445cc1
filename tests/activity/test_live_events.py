"""The lifecycle's after-commit announcements (todos/events.py): what the live pages hear.

Every transition that changes what a Board page shows announces its todo once, after commit;
a plain heartbeat announces nothing; a rolled-back transition announces nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from uuid import UUID

import pytest
from django.db import transaction

from tests.base import Personas
from tests.reach import (
    OWNER,
    claimed,
    died_then_failed,
    expire_lease,
    make_retry_due,
    new_todo,
)
from todos import events, lifecycle

pytestmark = pytest.mark.django_db

type Heard = list[tuple[str, UUID, str]]


@pytest.fixture
def heard() -> Iterator[Heard]:
    """What a listener subscribed for the test hears."""
    log: Heard = []

    def listener(todo_id: str, endpoint_id: UUID, state: str) -> None:
        log.append((todo_id, endpoint_id, state))

    events.subscribe(listener)
    yield log
    events.unsubscribe(listener)


@pytest.fixture
def committed(
    django_capture_on_commit_callbacks: Callable[..., object], heard: Heard
) -> Callable[[Callable[[], object]], Heard]:
    """Run ``work`` as if its transaction committed; return what was heard at commit only."""

    def run(work: Callable[[], object]) -> Heard:
        heard.clear()
        with django_capture_on_commit_callbacks(execute=True):  # type: ignore[operator]
            work()
            assert heard == [], "announced before the commit"
        return list(heard)

    return run


def test_creating_a_todo_announces_it_pending_after_commit(
    personas: Personas, committed: Callable[..., Heard]
) -> None:
    made: list[str] = []
    heard = committed(lambda: made.append(new_todo(personas.endpoint_a.id).id))
    assert heard == [(made[0], personas.endpoint_a.id, "pending")]


def test_each_agent_transition_announces_its_todo_once(
    personas: Personas, committed: Callable[..., Heard]
) -> None:
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep).id
    assert committed(lambda: lifecycle.claim(ep, todo_id, owner=OWNER)) == [
        (todo_id, ep, "claimed")
    ]
    assert committed(lambda: lifecycle.release(ep, todo_id, owner=OWNER)) == [
        (todo_id, ep, "pending")
    ]
    assert committed(lambda: lifecycle.claim_next(ep, ["default"], owner=OWNER)) == [
        (todo_id, ep, "claimed")
    ]
    assert committed(lambda: lifecycle.complete(ep, todo_id, owner=OWNER)) == [
        (todo_id, ep, "completed")
    ]


def test_a_plain_heartbeat_announces_nothing(
    personas: Personas, committed: Callable[..., Heard]
) -> None:
    held = claimed(personas.endpoint_a.id)
    assert (
        committed(lambda: lifecycle.heartbeat(held.todo.endpoint_id, held.todo.id, owner=OWNER))
        == []
    )


def test_a_heartbeat_with_a_note_announces_its_todo(
    personas: Personas, committed: Callable[..., Heard]
) -> None:
    held = claimed(personas.endpoint_a.id)
    ep = personas.endpoint_a.id
    heard = committed(lambda: lifecycle.heartbeat(ep, held.todo.id, owner=OWNER, note="step 2"))
    assert heard == [(held.todo.id, ep, "claimed")]


def test_board_actions_and_a2a_changes_announce_their_todo(
    personas: Personas, committed: Callable[..., Heard]
) -> None:
    ep, alice = personas.endpoint_a.id, personas.alice.id
    todo_id = new_todo(ep).id
    assert committed(lambda: lifecycle.operator_claim(alice, todo_id)) == [(todo_id, ep, "claimed")]
    assert committed(lambda: lifecycle.operator_extend(alice, todo_id)) == [
        (todo_id, ep, "claimed")
    ]
    assert committed(lambda: lifecycle.operator_fail(alice, todo_id, retryable=False)) == [
        (todo_id, ep, "failed")
    ]
    assert committed(lambda: lifecycle.retry(alice, todo_id)) == [(todo_id, ep, "pending")]
    lifecycle.claim(ep, todo_id, owner=OWNER)
    heard = committed(lambda: lifecycle.interrupt(ep, todo_id, owner=OWNER, state="input-required"))
    assert heard == [(todo_id, ep, "input-required")]
    assert committed(lambda: lifecycle.resume(alice, todo_id)) == [(todo_id, ep, "claimed")]
    assert committed(lambda: lifecycle.reject(ep, todo_id, owner=OWNER)) == [
        (todo_id, ep, "rejected")
    ]
    other = new_todo(ep).id
    assert committed(lambda: lifecycle.operator_cancel(alice, other)) == [(other, ep, "canceled")]


def test_sweeps_announce_every_todo_they_moved(
    personas: Personas, committed: Callable[..., Heard]
) -> None:
    ep = personas.endpoint_a.id
    lapsed = claimed(ep).todo.id
    expire_lease(lapsed)
    assert committed(lifecycle.reap) == [(lapsed, ep, "pending")]
    failed = died_then_failed(ep).todo.id
    make_retry_due(failed)
    assert committed(lifecycle.requeue_due_retries) == [(failed, ep, "pending")]


def test_revoking_an_endpoint_announces_the_todos_it_dead_lettered(
    personas: Personas, committed: Callable[..., Heard]
) -> None:
    ep = personas.endpoint_a.id
    first, second = new_todo(ep).id, claimed(ep).todo.id
    heard = committed(lambda: lifecycle.revoke_endpoint(personas.alice.id, ep))
    assert sorted(heard) == sorted([(first, ep, "failed"), (second, ep, "failed")])


def test_a_ring_announces_its_todo_and_a_skipped_one_does_not(
    personas: Personas, committed: Callable[..., Heard]
) -> None:
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep).id
    assert committed(lambda: _ring(todo_id, 2)) == [(todo_id, ep, "pending")]
    held = claimed(ep).todo.id
    assert committed(lambda: _ring(held, 1)) == []


def _ring(todo_id: str, subscribers: int) -> object:
    return lifecycle.ring(todo_id, reason="ready", ringer="doorbell", subscribers=subscribers)


def test_a_rolled_back_transition_announces_nothing(
    personas: Personas, committed: Callable[..., Heard]
) -> None:
    todo_id = new_todo(personas.endpoint_a.id).id

    class RolledBack(Exception):
        pass

    def rolled_back() -> None:
        try:
            with transaction.atomic():
                lifecycle.operator_claim(personas.alice.id, todo_id)
                raise RolledBack
        except RolledBack:
            pass

    assert committed(rolled_back) == []


def test_a_listener_that_raises_neither_fails_the_transition_nor_silences_the_others(
    personas: Personas, django_capture_on_commit_callbacks: Callable[..., object]
) -> None:
    after: Heard = []

    def broken(todo_id: str, endpoint_id: UUID, state: str) -> None:
        raise RuntimeError("listener down")

    def listener(todo_id: str, endpoint_id: UUID, state: str) -> None:
        after.append((todo_id, endpoint_id, state))

    events.subscribe(broken)
    events.subscribe(listener)
    try:
        with django_capture_on_commit_callbacks(execute=True):  # type: ignore[operator]
            todo = new_todo(personas.endpoint_a.id)
    finally:
        events.unsubscribe(broken)
        events.unsubscribe(listener)
    assert after == [(todo.id, personas.endpoint_a.id, "pending")]
