"""Time on a todo (docs/decisions/0027-time-and-cancellation.md): priority and not_before
order and gate claims; start_by and finish_by dead-letter through the sweeper; finish_by and
the run timeout cap every lease; a dedupe key gives one unfinished todo per endpoint, even to
racing creates; bad input is refused naming the field, with nothing created."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from switchboard.lib.errors import InvalidInput
from switchboard.lib.sql import fetch_all, fetch_one
from tests.base import Personas
from tests.reach import (
    OWNER,
    claimed,
    expire_lease,
    make_retry_due,
    new_todo,
    set_created_at,
)
from tests.rows import attempt_rows
from todos import lifecycle
from todos.models import Todo

SECOND = dt.timedelta(seconds=1)


def soon(seconds: float) -> dt.datetime:
    return timezone.now() + dt.timedelta(seconds=seconds)


def aged(*todos: Any) -> None:
    """Space the todos' created_at one second apart, oldest first: in one test transaction
    now() is one instant, so created_at alone would not order them."""
    for n, todo in enumerate(todos):
        set_created_at(todo.id, len(todos) - n)


def move(todo_id: str, **columns: str) -> None:
    """Set columns to SQL expressions (the database's clock: PostgreSQL's now() does not move
    with Python's)."""
    sets = ", ".join(f"{name} = {expr}" for name, expr in columns.items())
    fetch_all(f"UPDATE todos SET {sets} WHERE id = %(id)s", {"id": todo_id})


# --- claim order ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_queue_hands_out_higher_priority_first_then_older(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    low = new_todo(ep, priority=-5)
    plain_old = new_todo(ep)
    high = new_todo(ep, priority=10)
    plain_new = new_todo(ep)
    aged(low, plain_old, high, plain_new)

    order = []
    while (got := lifecycle.claim_next(ep, ["default"], owner=OWNER)) is not None:
        order.append(got.todo.id)
    assert order == [high.id, plain_old.id, plain_new.id, low.id]


@pytest.mark.django_db
def test_several_queues_are_merged_in_priority_order(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    a_old = new_todo(ep, "a")
    b_high = new_todo(ep, "b", priority=3)
    a_high = new_todo(ep, "a", priority=7)
    b_old = new_todo(ep, "b")
    aged(a_old, b_high, a_high, b_old)

    order = []
    while (got := lifecycle.claim_next(ep, ["a", "b"], owner=OWNER)) is not None:
        order.append(got.todo.id)
    assert order == [a_high.id, b_high.id, a_old.id, b_old.id]


@pytest.mark.django_db
def test_a_crowded_queue_still_yields_its_highest_priority_over_the_eight_heads(
    personas: Personas,
) -> None:
    # More than 8 heads on queue a, and queue b's one todo between a's in claim order.
    ep = personas.endpoint_a.id
    a_todos = [new_todo(ep, "a", priority=10) for _ in range(9)]
    b = new_todo(ep, "b", priority=5)
    a_low = new_todo(ep, "a", priority=1)
    aged(*a_todos, b, a_low)
    order = []
    while (got := lifecycle.claim_next(ep, ["a", "b"], owner=OWNER)) is not None:
        order.append(got.todo.id)
    assert order == [*(t.id for t in a_todos), b.id, a_low.id]


@pytest.mark.django_db
def test_not_before_keeps_a_todo_from_every_claim_until_it_passes(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    later = new_todo(ep, not_before=soon(3600), priority=100)
    now = new_todo(ep)

    got = lifecycle.claim_next(ep, ["default"], owner=OWNER)
    assert got is not None and got.todo.id == now.id
    assert lifecycle.claim_next(ep, ["default"], owner=OWNER) is None
    with pytest.raises(lifecycle.LeaseConflict):
        lifecycle.claim(ep, later.id, owner=OWNER)
    assert not Todo.objects.claimable().filter(pk=later.id).exists()

    move(later.id, not_before="now() - interval '1 second'")
    got = lifecycle.claim_next(ep, ["default"], owner=OWNER)
    assert got is not None and got.todo.id == later.id


@pytest.mark.django_db
def test_a_deferred_todo_is_rung_by_the_sweeper_once_due_and_not_before(
    personas: Personas,
) -> None:
    todo = new_todo(personas.endpoint_a.id, not_before=soon(3600))
    # Announced as changed, not ready: no doorbell yet, and no scan rings it.
    assert lifecycle.ring(todo.id, reason="created", ringer="test") is None
    assert [lifecycle.ring_due(scan) for scan in lifecycle.RING_SCANS] == [[]] * len(
        lifecycle.RING_SCANS
    )

    move(todo.id, not_before="now() - interval '1 second'")
    rung = lifecycle.ring_due("not_before")
    assert [r.todo_id for r in rung] == [todo.id]
    assert lifecycle.ring_due("not_before") == []  # once


# --- deadlines -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_start_by_dead_letters_a_todo_nobody_claimed_in_time(personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id, start_by=soon(3600))
    taken = claimed(personas.endpoint_a.id, start_by=soon(3600))
    move(todo.id, start_by="now() - interval '1 second'")
    move(taken.todo.id, start_by="now() - interval '1 second'")

    assert lifecycle.dead_letter_late() == (todo.id,)  # the claimed one started in time
    row = Todo.objects.get(pk=todo.id)
    assert (row.state, row.dead_letter, row.finished_at is not None) == ("failed", True, True)
    activity = fetch_one(
        "SELECT kind, actor_kind, actor_ref, detail FROM todo_activity WHERE todo_id = %(id)s"
        " AND kind = 'deadline'",
        {"id": todo.id},
    )
    assert activity is not None
    assert (activity["actor_kind"], activity["actor_ref"]) == ("system", "sweeper")
    assert '"reason": "start_by"' in activity["detail"]


@pytest.mark.django_db
def test_no_claim_hands_out_a_todo_past_its_start_by_before_the_sweep(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    late = new_todo(ep, start_by=soon(3600), priority=5)
    other = new_todo(ep)
    move(late.id, start_by="now() - interval '1 second'")

    # Not by claim_next (the other todo is the only one it may take) nor by id, on one queue
    # or several: the sweep, not yet run, dead-letters it as it would have.
    assert lifecycle.claim(ep, other.id, owner=OWNER).todo.id == other.id
    assert lifecycle.claim_next(ep, ["default"], owner=OWNER) is None
    assert lifecycle.claim_next(ep, ["default", "spare"], owner=OWNER) is None
    with pytest.raises(lifecycle.LeaseConflict):
        lifecycle.claim(ep, late.id, owner=OWNER)
    assert attempt_rows(late.id) == []
    assert lifecycle.dead_letter_late() == (late.id,)
    assert Todo.objects.get(pk=late.id).dead_letter


@pytest.mark.django_db
def test_a_takeover_of_a_lease_its_run_timeout_ended_closes_it_timed_out(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    got = claimed(ep, run_timeout_seconds=60, max_attempts=3)
    move(got.todo.id, claimed_at="now() - interval '61 seconds'")
    fetch_all(
        "UPDATE todo_attempts SET claimed_at = now() - interval '61 seconds'"
        " WHERE todo_id = %(id)s",
        {"id": got.todo.id},
    )
    expire_lease(got.todo.id)

    taken = lifecycle.claim(ep, got.todo.id, owner="worker-2")
    assert taken.took_over
    assert (taken.prior_attempts[0].outcome, taken.prior_attempts[0].summary) == (
        "timed_out",
        "run_timeout",
    )
    first, _second = attempt_rows(got.todo.id)
    assert (first["outcome"], first["disposition"], first["summary"]) == (
        "timed_out",
        "requeued",
        "run_timeout",
    )

    # A lease that lapsed before its run timeout is a plain lapse.
    again = claimed(ep, run_timeout_seconds=600)
    expire_lease(again.todo.id)
    took = lifecycle.claim(ep, again.todo.id, owner="worker-2")
    assert (took.prior_attempts[0].outcome, took.prior_attempts[0].summary) == (
        "lease_expired",
        None,
    )


@pytest.mark.django_db
def test_finish_by_caps_the_lease_and_its_passing_dead_letters_with_a_timed_out_attempt(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    finish_by = soon(120)
    got = claimed(ep, finish_by=finish_by, lease_ttl_seconds=3600)
    assert got.todo.lease_expires_at == finish_by
    assert got.todo.run_deadline == finish_by
    beat = lifecycle.heartbeat(ep, got.todo.id, owner=OWNER, lease_ttl_seconds=3600)
    assert beat.todo.lease_expires_at == finish_by

    move(got.todo.id, finish_by="now() - interval '1 second'")
    assert lifecycle.reap().requeued == ()  # the deadline's, not the reaper's
    assert lifecycle.dead_letter_late() == (got.todo.id,)
    row = Todo.objects.get(pk=got.todo.id)
    assert (row.state, row.next_retry_at, row.owner) == ("failed", None, None)
    [attempt] = attempt_rows(got.todo.id)
    assert (attempt["outcome"], attempt["disposition"], attempt["summary"]) == (
        "timed_out",
        "dead_lettered",
        "finish_by",
    )
    with pytest.raises(lifecycle.TodoEnded) as ended:
        lifecycle.heartbeat(ep, got.todo.id, owner=OWNER)
    assert (ended.value.code, ended.value.reason, ended.value.by) == (
        "timed_out",
        "finish_by",
        "sweeper",
    )


@pytest.mark.django_db
def test_a_pending_todo_past_finish_by_is_never_claimed_and_is_dead_lettered(
    personas: Personas,
) -> None:
    todo = new_todo(personas.endpoint_a.id, finish_by=soon(3600))
    move(todo.id, finish_by="now() - interval '1 second'")
    assert lifecycle.claim_next(personas.endpoint_a.id, ["default"], owner=OWNER) is None
    assert lifecycle.dead_letter_late() == (todo.id,)
    assert attempt_rows(todo.id) == []


@pytest.mark.django_db
def test_the_run_timeout_caps_the_lease_and_its_expiry_retries_as_a_failure(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    got = claimed(ep, run_timeout_seconds=60, lease_ttl_seconds=3600, max_attempts=3)
    cap = got.todo.claimed_at + dt.timedelta(seconds=60)
    assert got.todo.lease_expires_at == cap
    assert got.todo.run_deadline == cap
    beat = lifecycle.heartbeat(ep, got.todo.id, owner=OWNER, lease_ttl_seconds=3600)
    assert beat.todo.lease_expires_at == cap

    move(got.todo.id, claimed_at="now() - interval '61 seconds'")
    expire_lease(got.todo.id)
    result = lifecycle.reap()
    assert result.retry_scheduled == (got.todo.id,)
    row = Todo.objects.get(pk=got.todo.id)
    assert row.state == "failed" and row.next_retry_at is not None and not row.dead_letter
    [attempt] = attempt_rows(got.todo.id)
    assert (attempt["outcome"], attempt["disposition"], attempt["summary"]) == (
        "timed_out",
        "retry_scheduled",
        "run_timeout",
    )
    with pytest.raises(lifecycle.TodoEnded) as ended:
        lifecycle.complete(ep, got.todo.id, owner=OWNER)
    assert (ended.value.code, ended.value.reason) == ("timed_out", "run_timeout")


@pytest.mark.django_db
def test_a_run_timeout_on_the_last_attempt_dead_letters(personas: Personas) -> None:
    got = claimed(personas.endpoint_a.id, run_timeout_seconds=30, max_attempts=1)
    move(got.todo.id, claimed_at="now() - interval '31 seconds'")
    expire_lease(got.todo.id)
    assert lifecycle.reap().dead_lettered == (got.todo.id,)


@pytest.mark.django_db
def test_a_run_timeout_whose_retry_would_fall_past_finish_by_dead_letters(
    personas: Personas,
) -> None:
    """A retry due after finish_by could never be claimed: the reap dead-letters at once
    instead of scheduling one the deadline would end."""
    got = claimed(
        personas.endpoint_a.id,
        run_timeout_seconds=30,
        max_attempts=3,
        finish_by=timezone.now() + dt.timedelta(seconds=20),  # the backoff is 27-33 s
    )
    move(got.todo.id, claimed_at="now() - interval '31 seconds'")
    expire_lease(got.todo.id)
    assert lifecycle.reap().dead_lettered == (got.todo.id,)
    row = Todo.objects.get(pk=got.todo.id)
    assert row.state == "failed" and row.next_retry_at is None and row.dead_letter
    [attempt] = attempt_rows(got.todo.id)
    assert (attempt["outcome"], attempt["disposition"]) == ("timed_out", "dead_lettered")


# --- start_by bounds the first claim only; who ended a run that timed out -------------------


@pytest.mark.django_db
@pytest.mark.parametrize("back", ["reaped", "retry requeued", "released"])
def test_a_todo_claimed_before_its_start_by_stays_claimable_once_back_to_pending(
    personas: Personas, back: str
) -> None:
    # start_by bounds the first claim only: "a lapsed lease or a due retry past it was
    # claimed in time and stays claimable" (docs/decisions/0027-time-and-cancellation.md).
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, start_by=soon(3600), max_attempts=3).todo.id
    move(todo_id, start_by="now() - interval '1 second'")
    if back == "reaped":
        expire_lease(todo_id)
        assert lifecycle.reap().requeued == (todo_id,)
    elif back == "retry requeued":
        lifecycle.fail(ep, todo_id, owner=OWNER, retryable=True)
        make_retry_due(todo_id)
        assert lifecycle.requeue_due_retries() == (todo_id,)
    else:
        lifecycle.release(ep, todo_id, owner=OWNER)
    assert Todo.objects.get(pk=todo_id).state == "pending"

    assert lifecycle.dead_letter_late() == ()
    assert lifecycle.claim(ep, todo_id, owner="worker-2").todo.id == todo_id


@pytest.mark.django_db
def test_a_run_timeout_after_an_answered_question_is_told_as_the_sweepers(
    personas: Personas,
) -> None:
    # TodoEnded.by is who ended the claim (switchboard/lib/errors.py); ended.sql: a run
    # timeout is the reaper's, which writes no activity row, so the sweeper, never the answer.
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, run_timeout_seconds=60, max_attempts=3).todo.id
    lifecycle.interrupt(ep, todo_id, owner=OWNER, state="input-required")
    lifecycle.resume(personas.alice.id, todo_id, response={"answer": "yes"})
    move(todo_id, claimed_at="now() - interval '61 seconds'")
    expire_lease(todo_id)
    assert lifecycle.reap().retry_scheduled == (todo_id,)

    with pytest.raises(lifecycle.TodoEnded) as ended:
        lifecycle.heartbeat(ep, todo_id, owner=OWNER)
    assert (ended.value.code, ended.value.reason) == ("timed_out", "run_timeout")
    assert ended.value.by == "sweeper"


# --- dedupe --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_second_create_with_the_key_returns_the_first_and_says_so(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    first = new_todo(ep, dedupe_key="pr-42")
    again = new_todo(ep, dedupe_key="pr-42", title="another")
    other_endpoint = new_todo(personas.endpoint_b.id, dedupe_key="pr-42")

    assert (first.deduplicated, again.deduplicated) == (False, True)
    assert again.id == first.id and again.title == first.title
    assert other_endpoint.id != first.id and not other_endpoint.deduplicated
    assert Todo.objects.filter(endpoint_id=ep).count() == 1

    # Once the first is finished, the key is free again.
    lifecycle.operator_cancel(personas.alice.id, first.id)
    third = new_todo(ep, dedupe_key="pr-42")
    assert third.id != first.id and not third.deduplicated


@pytest.mark.django_db
def test_retrying_a_todo_whose_key_a_newer_one_holds_is_refused_and_changes_nothing(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    first = new_todo(ep, dedupe_key="pr-43")
    lifecycle.operator_cancel(personas.alice.id, first.id)
    newer = new_todo(ep, dedupe_key="pr-43")

    # A savepoint: the refused statement aborts its transaction, and the test's is still open.
    with pytest.raises(InvalidInput) as refused, transaction.atomic():
        lifecycle.operator_retry(personas.alice.id, first.id)

    assert refused.value.field == "dedupe_key"
    assert Todo.objects.get(pk=first.id).state == "canceled"
    assert Todo.objects.get(pk=newer.id).state == "pending"


@pytest.mark.django_db(transaction=True)
def test_racing_creates_with_one_key_give_one_todo(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    start = threading.Barrier(6)
    results: list[Any] = []

    def create() -> None:
        try:
            start.wait()
            results.append(lifecycle.create(ep, queue="default", dedupe_key="race"))
        except Exception as exc:  # collected, asserted below
            results.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=create) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert all(not isinstance(r, Exception) for r in results), results
    assert len({r.id for r in results}) == 1
    assert sorted(r.deduplicated for r in results) == [False] + [True] * 5
    assert Todo.objects.filter(endpoint_id=ep, dedupe_key="race").count() == 1


# --- bad input -----------------------------------------------------------------------------


BAD: dict[str, tuple[str, dict[str, Any]]] = {
    "priority too high": ("priority", {"priority": 1001}),
    "priority too low": ("priority", {"priority": -1001}),
    "priority not an integer": ("priority", {"priority": "9"}),
    "start_by past": ("start_by", {"start_by": "PAST"}),
    "finish_by past": ("finish_by", {"finish_by": "PAST"}),
    "start_by after finish_by": ("start_by", {"start_by": 7200, "finish_by": 3600}),
    "not_before after start_by": ("not_before", {"not_before": 7200, "start_by": 3600}),
    "not_before after finish_by": ("not_before", {"not_before": 7200, "finish_by": 3600}),
    "run timeout under 10 s": ("run_timeout_seconds", {"run_timeout_seconds": 9}),
    "naive instant": ("finish_by", {"finish_by": "NAIVE"}),
    "empty dedupe key": ("dedupe_key", {"dedupe_key": ""}),
}


def _arguments(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if value == "PAST":
            out[name] = timezone.now() - SECOND
        elif value == "NAIVE":
            out[name] = dt.datetime.now() + dt.timedelta(hours=1)
        elif name in ("start_by", "finish_by", "not_before"):
            out[name] = soon(value)
        else:
            out[name] = value
    return out


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(BAD))
def test_bad_time_is_refused_naming_the_field_and_nothing_is_created(
    personas: Personas, case: str
) -> None:
    field, raw = BAD[case]
    with pytest.raises(InvalidInput) as refused:
        new_todo(personas.endpoint_a.id, **_arguments(raw))
    assert refused.value.field == field
    assert not Todo.objects.exists()
