"""Bulk retry and bulk cancel (humans, from the Board's filter): one statement each, capped,
in the human's scope, re-checking every todo against the count the human confirmed."""

from __future__ import annotations

import dataclasses
import datetime as dt
from uuid import UUID

import pytest
from django.db import connection

from activity.models import TodoActivity
from switchboard.lib.errors import InvalidInput
from switchboard.scope import Scope
from tests.base import Personas
from tests.reach import OWNER, claimed, new_todo, set_created_at
from tests.rows import attempt_rows, open_attempts, todo_row
from todos import lifecycle, queries
from todos.queries import TodoFilters


def _dead(ep: UUID, queue: str = "default") -> str:
    todo_id = claimed(ep, queue).todo.id
    lifecycle.fail(ep, todo_id, owner=OWNER, retryable=False)
    return todo_id


def _count(human_id: int, filters: TodoFilters, action: str) -> queries.BulkCount:
    return queries.bulk_count(Scope.of_human(human_id), filters, action, lifecycle.BULK_MAX + 1)


def _after(todo_id: str, column: str, seen_at: dt.datetime) -> None:
    """Date ``column`` of the todo a second after the count: under a test's one transaction
    now() stands still, so a change "after the count" is written as the later commit would."""
    with connection.cursor() as cur:
        cur.execute(
            f"UPDATE todos SET {column} = %s WHERE id = %s",
            [seen_at + dt.timedelta(seconds=1), todo_id],
        )


def _db_now() -> dt.datetime:
    with connection.cursor() as cur:
        cur.execute("SELECT clock_timestamp()")
        return cur.fetchone()[0]


# --- the selection -------------------------------------------------------------------------------


def _set(field: dataclasses.Field[object]) -> object:
    return True if field.type in (bool, "bool") else "x"


@pytest.mark.parametrize(
    "field",
    [f for f in dataclasses.fields(TodoFilters) if f.name not in TodoFilters.ORDER_ONLY],
    ids=lambda f: f.name,
)
def test_every_filter_field_narrows_the_bulk_selection(field: dataclasses.Field[object]) -> None:
    """A filter the list applies and the bulk actions ignored would act on todos nobody saw:
    every field of TodoFilters must say something in its SQL predicate."""
    empty, params = TodoFilters().where()
    assert (empty, params) == ("TRUE", {})

    sql, _ = TodoFilters(**{field.name: _set(field)}).where()

    assert sql != "TRUE", field.name


def test_the_count_counts_what_the_action_acts_on(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    dead = [_dead(ep, "triage") for _ in range(3)]
    _dead(ep, "build")
    new_todo(ep, "triage")
    filters = TodoFilters(queue="triage")

    count = _count(personas.alice.id, filters, "retry")
    result = lifecycle.bulk_retry(personas.alice.id, filters, seen_at=count.seen_at)

    assert count.n == 3
    assert sorted(result.acted) == sorted(dead)


# --- bulk retry ----------------------------------------------------------------------------------


def test_bulk_retry_sends_the_filters_dead_letters_back_to_pending(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    dead = [_dead(ep, "triage") for _ in range(2)]
    other_queue = _dead(ep, "build")
    canceled = new_todo(ep, "triage").id
    lifecycle.operator_cancel(personas.alice.id, canceled)
    waiting = claimed(ep, "triage").todo.id
    lifecycle.fail(ep, waiting, owner=OWNER)  # a retry is scheduled: not dead

    result = lifecycle.bulk_retry(personas.alice.id, TodoFilters(queue="triage"), seen_at=_db_now())

    assert sorted(result.acted) == sorted(dead)
    for todo_id in dead:
        row = todo_row(todo_id)
        assert (row["state"], row["attempt"], row["finished_at"]) == ("pending", 0, None)
    assert todo_row(other_queue)["state"] == "failed"
    assert todo_row(canceled)["state"] == "canceled"  # not a dead letter
    assert todo_row(waiting)["next_retry_at"] is not None


def test_bulk_retry_records_one_human_action_per_todo(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    dead = [_dead(ep) for _ in range(3)]

    lifecycle.bulk_retry(personas.alice.id, TodoFilters(), seen_at=_db_now())

    rows = TodoActivity.objects.filter(todo_id__in=dead, kind="human_action")
    assert rows.count() == 3
    for row in rows:
        assert (row.actor_kind, row.actor_ref) == ("human", f"human:{personas.alice.id}")
        assert row.detail == {"action": "retry", "from": "failed", "to": "pending", "bulk": True}
        assert row.seq == todo_row(row.todo_id)["activity_seq"]


def test_bulk_retry_stays_in_the_humans_scope(personas: Personas) -> None:
    mine = _dead(personas.endpoint_a.id)
    bobs = _dead(personas.endpoint_b.id)

    everything = lifecycle.bulk_retry(personas.alice.id, TodoFilters(), seen_at=_db_now())
    # Naming bob's endpoint in the filter selects nothing of his either.
    named = lifecycle.bulk_retry(
        personas.alice.id, TodoFilters(endpoint="agent-b"), seen_at=_db_now()
    )

    assert everything.acted == (mine,)
    assert named.acted == ()
    assert todo_row(bobs)["state"] == "failed"
    assert _count(personas.alice.id, TodoFilters(endpoint="agent-b"), "retry").n == 0


def test_bulk_retry_leaves_a_todo_dead_lettered_after_the_count(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    counted = _dead(ep)
    seen_at = _count(personas.alice.id, TodoFilters(), "retry").seen_at
    later = _dead(ep)
    _after(later, "updated_at", seen_at)

    result = lifecycle.bulk_retry(personas.alice.id, TodoFilters(), seen_at=seen_at)

    assert result.acted == (counted,)
    assert todo_row(later)["state"] == "failed"


def test_bulk_retry_acts_on_at_most_its_limit_oldest_first(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    dead = [_dead(ep) for _ in range(3)]
    for age, todo_id in zip((30, 20, 10), dead, strict=True):
        set_created_at(todo_id, age)

    first = lifecycle.bulk_retry(personas.alice.id, TodoFilters(), seen_at=_db_now(), limit=2)

    assert sorted(first.acted) == sorted(dead[:2])
    assert todo_row(dead[2])["state"] == "failed"


def test_bulk_retry_skips_a_revoked_endpoints_todos(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = _dead(ep)
    lifecycle.revoke_endpoint(personas.alice.id, ep)

    result = lifecycle.bulk_retry(personas.alice.id, TodoFilters(), seen_at=_db_now())

    assert result.acted == ()
    assert todo_row(todo_id)["state"] == "failed"


@pytest.mark.parametrize(
    ("seen_at", "limit"),
    [
        (dt.datetime(2026, 1, 1), 10),  # no time zone
        ("2026-01-01T00:00:00Z", 10),
        (dt.datetime(2026, 1, 1, tzinfo=dt.UTC), 0),
        (dt.datetime(2026, 1, 1, tzinfo=dt.UTC), lifecycle.BULK_MAX + 1),
    ],
)
def test_bulk_actions_refuse_bad_input_and_change_nothing(
    personas: Personas, seen_at: object, limit: int
) -> None:
    todo_id = _dead(personas.endpoint_a.id)

    for call in (lifecycle.bulk_retry, lifecycle.bulk_cancel):
        with pytest.raises(InvalidInput):
            call(personas.alice.id, TodoFilters(), seen_at=seen_at, limit=limit)  # type: ignore[operator]

    assert todo_row(todo_id)["state"] == "failed"


def test_a_filter_postgresql_cannot_hold_matches_nothing(personas: Personas) -> None:
    _dead(personas.endpoint_a.id)
    filters = TodoFilters(queue="a\x00b")

    assert _count(personas.alice.id, filters, "retry").n == 0
    assert lifecycle.bulk_retry(personas.alice.id, filters, seen_at=_db_now()).acted == ()


# --- bulk cancel ---------------------------------------------------------------------------------


def test_bulk_cancel_cancels_the_unfinished_todos_and_closes_open_attempts(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    pending = new_todo(ep).id
    held = claimed(ep).todo.id
    waiting = claimed(ep).todo.id
    lifecycle.fail(ep, waiting, owner=OWNER)  # a retry scheduled: unfinished
    done = claimed(ep).todo.id
    lifecycle.complete(ep, done, owner=OWNER)
    dead = _dead(ep)

    result = lifecycle.bulk_cancel(
        personas.alice.id, TodoFilters(), seen_at=_db_now(), reason="queue retired"
    )

    assert sorted(result.acted) == sorted([pending, held, waiting])
    for todo_id in result.acted:
        assert todo_row(todo_id)["state"] == "canceled"
    assert open_attempts(held) == []
    closed = attempt_rows(held)[-1]
    assert (closed["outcome"], closed["disposition"]) == ("canceled", "canceled")
    assert closed["summary"] == "queue retired"
    assert todo_row(done)["state"] == "completed"
    assert todo_row(dead)["state"] == "failed"
    rows = {r.todo_id: r for r in TodoActivity.objects.filter(kind="human_action")}
    assert rows[held].attempt_seq == 1
    assert rows[pending].attempt_seq is None
    assert rows[held].message == "queue retired"
    assert rows[held].detail == {
        "action": "cancel",
        "from": "claimed",
        "to": "canceled",
        "bulk": True,
    }
    assert {r.actor_ref for r in rows.values()} == {f"human:{personas.alice.id}"}


def test_bulk_cancel_leaves_a_todo_claimed_after_the_count(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    stays_pending = new_todo(ep).id
    taken = new_todo(ep).id
    count = _count(personas.alice.id, TodoFilters(state="pending"), "cancel")
    lifecycle.claim(ep, taken, owner=OWNER)  # between the count and the confirm
    _after(taken, "claimed_at", count.seen_at)

    result = lifecycle.bulk_cancel(personas.alice.id, TodoFilters(), seen_at=count.seen_at)

    assert count.n == 2
    assert result.acted == (stays_pending,)
    assert todo_row(taken)["state"] == "claimed"
    assert len(open_attempts(taken)) == 1


def test_bulk_cancel_leaves_a_todo_created_after_the_count(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    counted = new_todo(ep).id
    seen_at = _count(personas.alice.id, TodoFilters(), "cancel").seen_at
    newer = new_todo(ep).id
    _after(newer, "created_at", seen_at)

    result = lifecycle.bulk_cancel(personas.alice.id, TodoFilters(), seen_at=seen_at)

    assert result.acted == (counted,)
    assert todo_row(newer)["state"] == "pending"


def test_bulk_cancel_stays_in_the_humans_scope_and_the_filter(personas: Personas) -> None:
    mine = new_todo(personas.endpoint_a.id, "triage").id
    other_queue = new_todo(personas.endpoint_a.id, "build").id
    bobs = new_todo(personas.endpoint_b.id, "triage").id

    result = lifecycle.bulk_cancel(
        personas.alice.id, TodoFilters(queue="triage"), seen_at=_db_now()
    )

    assert result.acted == (mine,)
    assert todo_row(other_queue)["state"] == "pending"
    assert todo_row(bobs)["state"] == "pending"
