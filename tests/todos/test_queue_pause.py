"""Pausing a queue: no agent's claim takes its todos (claim_next on one queue or several, a
claim by id), no ring goes out for it; leases already held run on. Resuming undoes it and rings
the queue's claimers. Each is recorded with its actor."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from switchboard.lib.actors import Actor
from switchboard.lib.errors import InvalidInput, LeaseConflict
from tests.base import Personas
from tests.reach import OWNER, claimed, new_todo
from tests.rows import todo_row
from todos import lifecycle
from todos.models import QueuePause


def _pause(personas: Personas, queue: str = "triage") -> None:
    assert lifecycle.pause_queue(personas.endpoint_a.id, queue, human_id=personas.alice.id).changed


def _resume(personas: Personas, queue: str = "triage") -> None:
    assert lifecycle.resume_queue(personas.endpoint_a.id, queue, human_id=personas.alice.id).changed


def test_claim_next_skips_a_paused_queue_until_it_is_resumed(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep, "triage").id
    _pause(personas)

    assert lifecycle.claim_next(ep, ["triage"], owner=OWNER) is None

    _resume(personas)
    result = lifecycle.claim_next(ep, ["triage"], owner=OWNER)
    assert result is not None and result.todo.id == todo_id


def test_claim_next_on_several_queues_skips_the_paused_one(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    paused = new_todo(ep, "triage").id  # older: taken first were the queue open
    open_one = new_todo(ep, "build").id
    _pause(personas)

    first = lifecycle.claim_next(ep, ["triage", "build"], owner=OWNER)
    second = lifecycle.claim_next(ep, ["triage", "build"], owner=OWNER)

    assert first is not None and first.todo.id == open_one
    assert second is None
    assert todo_row(paused)["state"] == "pending"


def test_claim_next_on_several_queues_walks_past_the_paused_one(personas: Personas) -> None:
    """The walk arm (claim_next_queues.sql) filters the pause as the heads arm does."""
    ep = personas.endpoint_a.id
    for _ in range(3):
        new_todo(ep, "triage")
    open_one = new_todo(ep, "build").id
    _pause(personas)

    sql = lifecycle.CLAIM_NEXT_QUEUES
    assert sql.count("queue_pauses") == 2  # heads and walk

    result = lifecycle.claim_next(ep, ["triage", "build"], owner=OWNER)
    assert result is not None and result.todo.id == open_one


def test_a_pause_is_per_endpoint(personas: Personas) -> None:
    theirs = new_todo(personas.endpoint_b.id, "triage").id
    _pause(personas)

    result = lifecycle.claim_next(personas.endpoint_b.id, ["triage"], owner=OWNER)

    assert result is not None and result.todo.id == theirs


def test_an_agents_claim_by_id_on_a_paused_queue_is_refused(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep, "triage").id
    _pause(personas)

    with pytest.raises(LeaseConflict, match="its queue 'triage' is paused"):
        lifecycle.claim(ep, todo_id, owner=OWNER)

    assert todo_row(todo_id)["state"] == "pending"
    # A todo the pause is not what stops (another holds it) is refused as ever.
    held = claimed(ep, queue="build").todo.id
    _pause(personas, "build")
    with pytest.raises(LeaseConflict, match="not in a state that allows it"):
        lifecycle.claim(ep, held, owner="someone-else")


def test_the_owning_humans_claim_on_a_paused_queue_is_not(personas: Personas) -> None:
    todo_id = new_todo(personas.endpoint_a.id, "triage").id
    _pause(personas)

    result = lifecycle.operator_claim(personas.alice.id, todo_id)

    assert result.todo.state == "claimed"


def test_a_pause_does_not_interrupt_a_lease_already_held(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, "triage").todo.id
    _pause(personas)

    lifecycle.heartbeat(ep, todo_id, owner=OWNER)
    lifecycle.complete(ep, todo_id, owner=OWNER)

    assert todo_row(todo_id)["state"] == "completed"


def test_a_paused_queue_is_not_rung(personas: Personas) -> None:
    todo_id = new_todo(personas.endpoint_a.id, "triage").id
    _pause(personas)

    assert lifecycle.ring(todo_id, reason="ready", ringer=Actor.doorbell()) is None

    _resume(personas)
    assert lifecycle.ring(todo_id, reason="ready", ringer=Actor.doorbell()) is not None


def test_the_sweepers_rings_skip_a_paused_queue(personas: Personas) -> None:
    """A push endpoint's todo nobody rang is due a push ring (ring_due's push scan), not while
    its queue is paused."""
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE endpoints SET push_url = 'https://agent.example/ring' WHERE id = %s",
            [personas.endpoint_a.id],
        )
    todo_id = new_todo(personas.endpoint_a.id, "triage").id
    _pause(personas)

    assert lifecycle.ring_due("push") == []

    _resume(personas)
    assert [r.todo_id for r in lifecycle.ring_due("push")] == [todo_id]


def test_pause_and_resume_are_recorded_with_their_actor(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    _pause(personas)
    again = lifecycle.pause_queue(ep, "triage", human_id=personas.alice.id)
    _resume(personas)
    not_paused = lifecycle.resume_queue(ep, "triage", human_id=personas.alice.id)
    lifecycle.pause_queue(ep, "triage", human_id=None)  # the system: a command

    assert (again.changed, not_paused.changed) == (False, False)
    first, second = QueuePause.objects.order_by("id")
    me = f"human:{personas.alice.id}"
    assert (first.paused_by_kind, first.paused_by) == ("human", me)
    assert (first.resumed_by_kind, first.resumed_by) == ("human", me)
    assert first.resumed_at is not None
    assert (second.paused_by_kind, second.paused_by, second.resumed_at) == (
        "system",
        "command:queue",
        None,
    )


def test_a_human_cannot_pause_another_humans_queue(personas: Personas) -> None:
    with pytest.raises(InvalidInput):
        lifecycle.pause_queue(personas.endpoint_b.id, "triage", human_id=personas.alice.id)
    with pytest.raises(InvalidInput):
        lifecycle.resume_queue(personas.endpoint_b.id, "triage", human_id=personas.alice.id)

    assert not QueuePause.objects.exists()


@pytest.mark.parametrize("queue", ["", "a\x00b", "x" * 200, "tab\there"])
def test_a_bad_queue_name_is_refused(personas: Personas, queue: str) -> None:
    with pytest.raises(InvalidInput):
        lifecycle.pause_queue(personas.endpoint_a.id, queue, human_id=personas.alice.id)

    assert not QueuePause.objects.exists()


def test_one_open_pause_per_queue_is_the_schemas_rule(personas: Personas) -> None:
    _pause(personas)
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cur:
        cur.execute(
            "INSERT INTO queue_pauses (endpoint_id, queue, paused_by_kind, paused_by)"
            " VALUES (%s, 'triage', 'system', 'x')",
            [personas.endpoint_a.id],
        )
