"""The change feed's announcements (todos/sql/_notify_*.sql): what every consumer hears.

Every transition that changes what a page or a consumer shows announces its todo once, from its
own statement, delivered at commit; a plain heartbeat announces nothing; a rolled-back
transition announces nothing. A second psycopg connection LISTENs on ``todo_changed``, as each
process's listener does (switchboard/lib/changefeed.py); the tests commit for real.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

import psycopg
import pytest
from django.db import connection, transaction

from switchboard.lib import changefeed
from switchboard.lib.actors import Actor
from switchboard.lib.changefeed import Change
from tests.base import Personas
from tests.concurrency.harness import raw_connection
from tests.reach import (
    OWNER,
    claimed,
    died_then_failed,
    expire_lease,
    make_retry_due,
    new_todo,
)
from todos import lifecycle
from todos.queries import TodoFilters

pytestmark = pytest.mark.django_db(transaction=True)

type Heard = list[tuple[str, UUID, str]]
_SENTINEL = "sentinel"


def _drain(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Every payload up to this test's sentinel, sent once the work's announcements have gone
    (notifications arrive in commit order, and the announcer sends after the work commits)."""
    assert changefeed.ANNOUNCER.flush()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [changefeed.CHANNEL, _SENTINEL])
    out: list[dict[str, Any]] = []
    for note in conn.notifies(timeout=5.0):
        if note.payload == _SENTINEL:
            return out
        out.append(json.loads(note.payload))
    raise AssertionError(f"the sentinel never arrived; heard {out}")


@pytest.fixture
def listener() -> Iterator[psycopg.Connection[Any]]:
    with raw_connection(autocommit=True) as conn:
        conn.execute(f"LISTEN {changefeed.CHANNEL}")
        yield conn


@pytest.fixture
def payloads(listener: psycopg.Connection[Any]) -> Callable[[Callable[[], object]], list[dict]]:
    """Run ``work`` (it commits); return the payloads it announced."""

    def run(work: Callable[[], object]) -> list[dict[str, Any]]:
        _drain(listener)  # whatever the set-up announced
        work()
        return _drain(listener)

    return run


@pytest.fixture
def committed(
    payloads: Callable[[Callable[[], object]], list[dict[str, Any]]],
) -> Callable[[Callable[[], object]], Heard]:
    """Run ``work`` (it commits); return (todo, endpoint, state) of each change it announced."""

    def run(work: Callable[[], object]) -> Heard:
        return [
            (p["todo_id"], UUID(p["endpoint_id"]), p["state"])
            for p in payloads(work)
            if p["kind"] != changefeed.RUNG or p["todo_id"]
        ]

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
    return lifecycle.ring(todo_id, reason="ready", ringer=Actor.doorbell(), subscribers=subscribers)


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


def test_a_consumer_that_raises_does_not_silence_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    feed = changefeed.Feed()
    after: list[Change] = []

    def broken(change: Change) -> None:
        raise RuntimeError("consumer down")

    feed.subscribe(broken)
    feed.subscribe(after.append)
    feed.handle(json.dumps({"kind": "changed", "todo_id": "td_1", "endpoint_id": str(UUID(int=1))}))
    feed.handle("not json")  # logged and dropped
    assert after == [Change(kind="changed", todo_id="td_1", endpoint_id=UUID(int=1))]
    assert "consumer failed" in caplog.text and "malformed" in caplog.text


def test_the_announcement_waits_for_the_commit(
    personas: Personas, listener: psycopg.Connection[Any]
) -> None:
    _drain(listener)
    with transaction.atomic():
        todo_id = new_todo(personas.endpoint_a.id).id
        assert list(listener.notifies(timeout=0.2, stop_after=1)) == []
    assert [p["todo_id"] for p in _drain(listener)] == [todo_id]


def test_the_payload_is_ids_and_facts_and_the_kind_says_ready_or_changed(
    personas: Personas, payloads: Callable[[Callable[[], object]], list[dict[str, Any]]]
) -> None:
    ep = personas.endpoint_a.id
    made: list[str] = []
    (created,) = payloads(lambda: made.append(new_todo(ep, "triage").id))
    assert created == {
        "kind": "ready",
        "todo_id": made[0],
        "endpoint_id": str(ep),
        "queue": "triage",
        "state": "pending",
    }
    (claim,) = payloads(lambda: lifecycle.claim(ep, made[0], owner=OWNER))
    assert claim["kind"] == "changed" and claim["state"] == "claimed"


def test_reaping_into_the_dead_letter_announces_a_change_not_a_ring(
    personas: Personas, payloads: Callable[[Callable[[], object]], list[dict[str, Any]]]
) -> None:
    ep = personas.endpoint_a.id
    lapsed = claimed(ep, max_attempts=1).todo.id
    expire_lease(lapsed)
    (reaped,) = payloads(lifecycle.reap)
    assert (reaped["kind"], reaped["todo_id"], reaped["state"]) == ("changed", lapsed, "failed")


def test_a_bulk_cancel_announces_every_todo_it_canceled(
    personas: Personas, committed: Callable[..., Heard]
) -> None:
    ep = personas.endpoint_a.id
    pending, held = new_todo(ep).id, claimed(ep).todo.id
    with connection.cursor() as cursor:
        cursor.execute("SELECT now() + interval '1 minute'")
        seen_at = cursor.fetchone()[0]
    heard = committed(
        lambda: lifecycle.bulk_cancel(personas.alice.id, TodoFilters(), seen_at=seen_at)
    )
    assert sorted(heard) == sorted([(pending, ep, "canceled"), (held, ep, "canceled")])
