"""The activity rows the lifecycle writes, each in the statement of its transition."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.db import transaction

from switchboard import runtime_settings
from switchboard.lib import metrics
from switchboard.lib.actors import Actor
from switchboard.lib.errors import InvalidInput, LeaseConflict
from switchboard.lib.sql import fetch_all
from switchboard.scope import Scope
from tests.base import Personas
from tests.concurrency.harness import raw_connection
from tests.reach import OWNER, claimed, expire_lease, make_retry_due, new_todo
from tests.rows import todo_row
from todos import lifecycle
from todos.models import Todo
from todos.types import RingResult

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def activity(todo_id: str) -> list[dict[str, Any]]:
    rows = fetch_all(
        "SELECT * FROM todo_activity WHERE todo_id = %(id)s ORDER BY seq", {"id": todo_id}
    )
    for row in rows:
        if isinstance(row["detail"], str):
            row["detail"] = json.loads(row["detail"])
    return rows


def attempt(todo_id: str, seq: int) -> dict[str, Any]:
    (row,) = fetch_all(
        "SELECT * FROM todo_attempts WHERE todo_id = %(id)s AND seq = %(seq)s",
        {"id": todo_id, "seq": seq},
    )
    return row


def failed_todo(personas: Personas) -> str:
    held = claimed(personas.endpoint_a.id, max_attempts=1)
    lifecycle.fail(personas.endpoint_a.id, held.todo.id, owner=OWNER)
    return held.todo.id


# --- human actions ------------------------------------------------------------------------------

# Each operator-owned function, with how to bring a todo to where it applies and how to call it.
# The test below fails when lifecycle gains an operator function this table does not name.
type Setup = Callable[[Personas], str]
type Act = Callable[[Personas, str], Any]


def _pending(p: Personas) -> str:
    return new_todo(p.endpoint_a.id).id


def _held(p: Personas) -> str:
    return claimed(p.endpoint_a.id).todo.id


def _interrupted(p: Personas) -> str:
    todo_id = _held(p)
    lifecycle.interrupt(
        p.endpoint_a.id, todo_id, owner=OWNER, state="input-required", input_request={"q": "?"}
    )
    return todo_id


OPERATOR_FUNCTIONS: dict[str, tuple[Setup, Act, str, str, str]] = {
    # name: (setup, call, action, from, to)
    "operator_claim": (
        _pending,
        lambda p, t: lifecycle.operator_claim(p.alice.id, t),
        "claim",
        "pending",
        "claimed",
    ),
    "operator_extend": (
        _held,
        lambda p, t: lifecycle.operator_extend(p.alice.id, t),
        "extend",
        "claimed",
        "claimed",
    ),
    "operator_complete": (
        _held,
        lambda p, t: lifecycle.operator_complete(p.alice.id, t, summary="done by hand"),
        "complete",
        "claimed",
        "completed",
    ),
    "operator_fail": (
        _held,
        lambda p, t: lifecycle.operator_fail(p.alice.id, t, summary="no good"),
        "fail",
        "claimed",
        "failed",
    ),
    "operator_release": (
        _held,
        lambda p, t: lifecycle.operator_release(p.alice.id, t),
        "release",
        "claimed",
        "pending",
    ),
    "operator_retry": (
        failed_todo,
        lambda p, t: lifecycle.operator_retry(p.alice.id, t),
        "retry",
        "failed",
        "pending",
    ),
    "operator_cancel": (
        _held,
        lambda p, t: lifecycle.operator_cancel(p.alice.id, t, reason="not needed"),
        "cancel",
        "claimed",
        "canceled",
    ),
    "retry": (
        failed_todo,
        lambda p, t: lifecycle.retry(p.alice.id, t),
        "retry",
        "failed",
        "pending",
    ),
    "resume": (
        _interrupted,
        lambda p, t: lifecycle.resume(p.alice.id, t, response={"a": "yes"}),
        "resume",
        "input-required",
        "claimed",
    ),
}


def test_the_table_names_every_operator_function() -> None:
    human_first = {
        name
        for name, func in inspect.getmembers(lifecycle, inspect.isfunction)
        if func.__module__.startswith(lifecycle.__name__ + ".")
        and not name.startswith("_")
        and next(iter(inspect.signature(func).parameters), None) == "human_id"
        and name != "revoke_endpoint"  # an endpoint-wide action, recorded by its attempts
        # Many todos at once, one marked row each (tests/todos/test_bulk.py).
        and name not in ("bulk_retry", "bulk_cancel")
        # Forgetting erases the trail down to one tombstone row (tests/activity/test_forget.py).
        and name not in ("forget", "bulk_forget")
    }
    assert human_first == set(OPERATOR_FUNCTIONS)


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(OPERATOR_FUNCTIONS))
def test_each_operator_function_writes_exactly_one_human_action(
    personas: Personas, name: str
) -> None:
    setup, act, action, from_state, to_state = OPERATOR_FUNCTIONS[name]
    todo_id = setup(personas)
    before = len(activity(todo_id))

    act(personas, todo_id)

    rows = activity(todo_id)
    assert len(rows) == before + 1
    row = rows[-1]
    assert (row["kind"], row["actor_kind"], row["actor_ref"]) == (
        "human_action",
        "human",
        f"human:{personas.alice.id}",
    )
    assert row["detail"] == {"action": action, "from": from_state, "to": to_state}
    assert row["seq"] == todo_row(todo_id)["activity_seq"]


@pytest.mark.django_db
def test_a_human_action_names_the_attempt_it_closed_and_keeps_the_reason(
    personas: Personas,
) -> None:
    held = claimed(personas.endpoint_a.id)

    lifecycle.operator_fail(personas.alice.id, held.todo.id, summary=f"key {AWS_KEY} leaked")

    (row,) = activity(held.todo.id)
    assert row["attempt_seq"] == held.attempt_seq
    assert AWS_KEY not in row["message"] and row["message"].startswith("key ")


@pytest.mark.django_db
def test_staff_acting_for_the_owner_are_recorded_as_themselves(personas: Personas) -> None:
    todo_id = failed_todo(personas)

    lifecycle.retry(personas.alice.id, todo_id, actor_id=personas.admin.id)

    (row,) = activity(todo_id)
    assert row["actor_ref"] == f"human:{personas.admin.id}"


@pytest.mark.django_db
def test_a_missed_operator_action_writes_nothing(personas: Personas) -> None:
    todo_id = new_todo(personas.endpoint_a.id).id

    with pytest.raises(LeaseConflict):
        lifecycle.operator_complete(personas.alice.id, todo_id)

    assert activity(todo_id) == []
    assert todo_row(todo_id)["activity_seq"] == 0


@pytest.mark.django_db
def test_an_agents_own_transitions_write_no_activity(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    first = claimed(ep)
    lifecycle.heartbeat(ep, first.todo.id, owner=OWNER)
    lifecycle.release(ep, first.todo.id, owner=OWNER)
    again = lifecycle.claim_next(ep, ["default"], owner=OWNER)
    assert again is not None
    lifecycle.fail(ep, again.todo.id, owner=OWNER, retryable=False)
    done = claimed(ep)
    lifecycle.complete(ep, done.todo.id, owner=OWNER)

    assert activity(first.todo.id) == [] and activity(done.todo.id) == []


# --- a2a_state and retried ---------------------------------------------------------------------


@pytest.mark.django_db
def test_a2a_transitions_are_recorded_as_the_endpoint_or_its_requester(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    paused = claimed(ep).todo.id
    lifecycle.interrupt(ep, paused, owner=OWNER, state="auth-required")
    refused = claimed(ep).todo.id
    lifecycle.reject(ep, refused, owner=OWNER, summary="not mine")
    dropped = claimed(ep).todo.id
    lifecycle.cancel(Scope.of_endpoint(ep), dropped, reason="requester gave up")

    rows = [activity(t)[-1] for t in (paused, refused, dropped)]
    assert [(r["kind"], r["actor_kind"]) for r in rows] == [("a2a_state", "endpoint")] * 3
    assert [r["detail"]["action"] for r in rows] == ["interrupt", "reject", "cancel"]
    assert [r["detail"]["to"] for r in rows] == ["auth-required", "rejected", "canceled"]
    # The holder is its endpoint, not its own lease label (that stays on the attempt); the
    # cancel over A2A is the endpoint's requester.
    assert [r["actor_ref"] for r in rows] == [f"endpoint:{ep}", f"endpoint:{ep}", f"requester:{ep}"]
    assert rows[1]["message"] == "not mine"


@pytest.mark.django_db
def test_the_retry_sweep_records_each_requeue_as_the_system(personas: Personas) -> None:
    held = claimed(personas.endpoint_a.id)
    lifecycle.fail(personas.endpoint_a.id, held.todo.id, owner=OWNER)
    make_retry_due(held.todo.id)

    assert lifecycle.requeue_due_retries() == (held.todo.id,)

    (row,) = activity(held.todo.id)
    assert (row["kind"], row["actor_kind"], row["actor_ref"]) == ("retried", "system", "sweeper")
    assert row["detail"] == {"action": "requeue", "from": "failed", "to": "pending"}


@pytest.mark.django_db
def test_reaping_writes_no_activity_its_attempt_records_it(personas: Personas) -> None:
    held = claimed(personas.endpoint_a.id)
    expire_lease(held.todo.id)

    lifecycle.reap()

    assert activity(held.todo.id) == []


# --- notes ------------------------------------------------------------------------------------


def beat(p: Personas, todo_id: str, note: str | None, **kw: Any) -> Any:
    return lifecycle.heartbeat(p.endpoint_a.id, todo_id, owner=OWNER, note=note, **kw)


@pytest.mark.django_db
def test_a_heartbeat_note_is_stored_on_the_open_attempt(personas: Personas) -> None:
    held = claimed(personas.endpoint_a.id)

    beat(personas, held.todo.id, "read the logs\nfound the flaky test")

    (row,) = activity(held.todo.id)
    assert (row["kind"], row["actor_kind"], row["actor_ref"]) == (
        "note",
        "endpoint",
        f"endpoint:{personas.endpoint_a.id}",
    )
    assert row["attempt_seq"] == held.attempt_seq
    assert row["message"] == "read the logs\nfound the flaky test"
    assert row["truncated"] is False


@pytest.mark.django_db
def test_a_heartbeat_without_a_note_writes_no_activity(personas: Personas) -> None:
    held = claimed(personas.endpoint_a.id)

    beat(personas, held.todo.id, None)

    assert activity(held.todo.id) == []
    assert todo_row(held.todo.id)["activity_seq"] == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    "secret",
    [
        AWS_KEY,
        "ghp_" + "a" * 36,
        "sbk_" + "A" * 43,
    ],
)
def test_notes_are_stored_masked(personas: Personas, secret: str) -> None:
    held = claimed(personas.endpoint_a.id)

    beat(personas, held.todo.id, f"using {secret} to push")

    (row,) = activity(held.todo.id)
    assert secret not in row["message"]
    assert row["message"].startswith("using ") and row["message"].endswith(" to push")


@pytest.mark.django_db
def test_a_long_note_is_cut_on_a_character_boundary(personas: Personas) -> None:
    held = claimed(personas.endpoint_a.id)

    beat(personas, held.todo.id, "é" * 400)  # 800 bytes

    (row,) = activity(held.todo.id)
    assert row["truncated"] is True
    assert row["message"] == "é" * 256  # 512 bytes exactly


@pytest.mark.django_db
@pytest.mark.parametrize("bad", ["nul\x00here", "bell\x07", "lone \ud800 surrogate", "esc\x1b["])
def test_a_note_with_control_characters_is_refused_and_nothing_changes(
    personas: Personas, bad: str
) -> None:
    held = claimed(personas.endpoint_a.id)
    lease = todo_row(held.todo.id)["lease_expires_at"]

    with pytest.raises(InvalidInput) as err:
        beat(personas, held.todo.id, bad)

    assert err.value.field == "note"
    assert activity(held.todo.id) == []
    assert todo_row(held.todo.id)["lease_expires_at"] == lease


@pytest.mark.django_db
def test_a_fenced_heartbeat_with_a_wrong_token_writes_no_note(personas: Personas) -> None:
    held = claimed(personas.endpoint_a.id, require_fence=True)
    other = claimed(personas.endpoint_a.id, require_fence=True)
    assert other.lease_token is not None

    with pytest.raises(LeaseConflict):
        beat(personas, held.todo.id, "sneaky", lease_token=other.lease_token)

    assert activity(held.todo.id) == []


@pytest.mark.django_db
def test_notes_past_the_attempts_cap_are_counted_not_stored(personas: Personas) -> None:
    runtime_settings.put("notes_max_per_attempt", 2)
    runtime_settings.clear_cache()
    held = claimed(personas.endpoint_a.id)

    for n in range(5):
        beat(personas, held.todo.id, f"note {n}")

    assert [r["message"] for r in activity(held.todo.id)] == ["note 0", "note 1"]
    assert attempt(held.todo.id, held.attempt_seq)["notes_dropped"] == 3
    # The next attempt starts with room again.
    lifecycle.release(personas.endpoint_a.id, held.todo.id, owner=OWNER)
    again = lifecycle.claim(personas.endpoint_a.id, held.todo.id, owner=OWNER)
    beat(personas, held.todo.id, "fresh attempt")
    assert activity(held.todo.id)[-1]["attempt_seq"] == again.attempt_seq


@pytest.mark.django_db
def test_the_todos_activity_cap_trims_the_oldest_notes(personas: Personas) -> None:
    runtime_settings.put("activity_max_per_todo", 10)
    runtime_settings.clear_cache()
    held = claimed(personas.endpoint_a.id)
    lifecycle.operator_extend(personas.alice.id, held.todo.id)  # seq 1, not a note: kept

    for n in range(15):
        beat(personas, held.todo.id, f"note {n}")

    rows = activity(held.todo.id)
    assert rows[0]["kind"] == "human_action"
    notes = [r for r in rows if r["kind"] == "note"]
    assert [r["message"] for r in notes] == [f"note {n}" for n in range(5, 15)]
    assert all(r["seq"] > 16 - 10 for r in notes)


@pytest.mark.django_db(transaction=True)
def test_activity_rows_are_counted_in_metrics_once_committed(personas: Personas) -> None:
    def value() -> float:
        sample = metrics.ACTIVITY.labels(kind="note")._value.get()
        return float(sample)

    held = claimed(personas.endpoint_a.id)
    before = value()
    with transaction.atomic():
        beat(personas, held.todo.id, "one")
        assert value() == before
    assert value() == before + 1


# --- rings --------------------------------------------------------------------------------------


def ring(todo_id: str, subscribers: int) -> RingResult | None:
    return lifecycle.ring(todo_id, reason="ready", ringer=Actor.doorbell(), subscribers=subscribers)


@pytest.mark.django_db
def test_a_ring_about_a_pending_todo_leaves_a_rung_row(personas: Personas) -> None:
    todo_id = new_todo(personas.endpoint_a.id).id

    rung = ring(todo_id, 2)

    assert rung is not None and rung.ring_attempts == 1
    (row,) = activity(todo_id)
    assert (row["kind"], row["actor_kind"], row["actor_ref"]) == ("rung", "system", "doorbell")
    assert row["detail"] == {
        "subscribers": 2,
        "reason": "ready",
        "ring_id": row["detail"]["ring_id"],
    }
    todo = Todo.objects.get(id=todo_id)
    assert (todo.ring_attempts, todo.last_ringed_at is not None) == (1, True)


@pytest.mark.django_db
def test_a_ring_about_a_todo_no_longer_pending_leaves_nothing(personas: Personas) -> None:
    held = claimed(personas.endpoint_a.id)

    assert ring(held.todo.id, 1) is None
    assert activity(held.todo.id) == []


@pytest.mark.django_db(transaction=True)
def test_a_ring_never_waits_on_a_todo_a_claim_holds(personas: Personas) -> None:
    todo_id = new_todo(personas.endpoint_a.id).id
    with raw_connection() as other:
        other.execute("SELECT 1 FROM todos WHERE id = %s FOR UPDATE", [todo_id])

        assert ring(todo_id, 1) is None

    assert activity(todo_id) == []


@pytest.mark.django_db
def test_rung_rows_past_the_activity_cap_go_oldest_first(personas: Personas) -> None:
    runtime_settings.put("activity_max_per_todo", 10)
    runtime_settings.clear_cache()
    todo_id = new_todo(personas.endpoint_a.id).id

    runtime_settings.put("ring_gate_seconds", 1)
    runtime_settings.clear_cache()
    for _ in range(14):
        Todo.objects.filter(id=todo_id).update(last_ringed_at=None)  # open the gate
        ring(todo_id, 1)

    assert [r["seq"] for r in activity(todo_id)] == list(range(5, 15))


@pytest.mark.parametrize(
    "name", ["CLAIM_NEXT", "CLAIM", "HEARTBEAT", "COMPLETE", "FAIL", "RELEASE", "REAP"]
)
def test_the_agents_hot_statements_carry_no_activity_arm(name: str) -> None:
    # The agent path pays nothing for activity: its statements neither bump activity_seq nor
    # insert into todo_activity (the claim + complete budget is unchanged by construction).
    sql = getattr(lifecycle, name)
    assert "todo_activity" not in sql and "activity_seq" not in sql


@pytest.mark.django_db
def test_retention_deletes_a_todos_activity_with_it_and_counts_it(personas: Personas) -> None:
    from tests.reach import set_finished_at
    from todos import retention

    todo_id = new_todo(personas.endpoint_a.id).id
    lifecycle.operator_cancel(personas.alice.id, todo_id, reason="not needed")
    set_finished_at(todo_id, 400 * 86_400)

    assert retention.run(dry_run=True).activity == 1
    result = retention.run()

    assert (result.todos, result.activity) == (1, 1)
    assert activity(todo_id) == []


# --- every row carries its todo's endpoint ------------------------------------------------------


@pytest.mark.django_db
def test_every_row_and_attempt_the_writers_add_carries_its_todos_endpoint(
    personas: Personas,
) -> None:
    """The Activity feed walks rows by the endpoint copied onto them
    (activity/migrations/0005_endpoint.py, attempts/migrations/0007_endpoint.py): every writer
    of an activity row, and the claim that opens an attempt (an owner's too, which has no
    claimer endpoint), copies its todo's, for each of two endpoints."""
    for ep, human in (
        (personas.endpoint_a.id, personas.alice),
        (personas.endpoint_b.id, personas.bob),
    ):
        noted = claimed(ep).todo.id
        lifecycle.heartbeat(ep, noted, owner=OWNER, note="read the logs")  # heartbeat_note.sql
        lifecycle.operator_fail(human.id, noted, summary="by hand")  # _activity_arm.sql
        rung = new_todo(ep).id
        assert lifecycle.ring(rung, reason="ready", ringer=Actor.doorbell())  # _ring_arms.sql
        late = new_todo(ep).id
        fetch_all(
            "UPDATE todos SET finish_by = now() - interval '1 second' WHERE id = %(id)s"
            " RETURNING id",
            {"id": late},
        )
        assert lifecycle.dead_letter_late() == (late,)  # deadlines.sql
        capped = claimed(ep).todo.id
        fetch_all(
            "UPDATE todos SET max_cost_usd = 0.01, cost_usd = 0.02 WHERE id = %(id)s RETURNING id",
            {"id": capped},
        )
        assert lifecycle.end_over_cap() == (capped,)  # over_cap.sql
        lifecycle.operator_claim(human.id, new_todo(ep).id)  # the owner's attempt

    rows = fetch_all(
        """SELECT v.kind, v.endpoint_id, t.endpoint_id AS todo_endpoint
             FROM todo_activity v JOIN todos t ON t.id = v.todo_id""",
        {},
    )
    attempts = fetch_all(
        """SELECT a.claimer_kind, a.endpoint_id, t.endpoint_id AS todo_endpoint
             FROM todo_attempts a JOIN todos t ON t.id = a.todo_id""",
        {},
    )
    assert {r["kind"] for r in rows} == {"note", "human_action", "rung", "deadline", "budget"}
    assert {r["claimer_kind"] for r in attempts} == {"endpoint", "owner"}
    for row in rows + attempts:
        assert row["endpoint_id"] == row["todo_endpoint"], row
    assert {r["endpoint_id"] for r in rows} == {personas.endpoint_a.id, personas.endpoint_b.id}
