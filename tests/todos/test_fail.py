"""fail: retry after backoff while budget is left and the failure is retryable; else dead letter."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from switchboard import runtime_settings
from switchboard.lib.errors import InvalidInput, LeaseConflict, TodoNotFound
from tests.base import Personas
from tests.reach import OWNER, claimed, make_retry_due, new_todo
from tests.rows import attempt_rows, db_now, only_attempt, seconds_until, snapshot, todo_row
from todos import lifecycle


def _fail_again(ep: Any, todo_id: str, **kwargs: Any) -> None:
    make_retry_due(todo_id)
    lifecycle.claim(ep, todo_id, owner=OWNER)
    lifecycle.fail(ep, todo_id, owner=OWNER, **kwargs)


def test_fail_with_budget_left_schedules_a_retry_after_the_base_backoff(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    result = lifecycle.fail(
        ep,
        todo_id,
        owner=OWNER,
        result={"exit": 1},
        summary="tests failed",
        artifact="s3://bucket/log.txt",
    )

    row = todo_row(todo_id)
    assert row["state"] == "failed"
    assert row["result"] == {"exit": 1}
    assert (row["owner"], row["lease_expires_at"], row["finished_at"]) == (None, None, None)
    assert 27.0 <= seconds_until(todo_id, "next_retry_at") <= 33.0  # 30 s ± 10 %
    attempt = only_attempt(todo_id)
    assert (attempt["outcome"], attempt["disposition"]) == ("failed", "retry_scheduled")
    assert attempt["ended_at"] == db_now()
    assert (attempt["summary"], attempt["artifact"]) == ("tests failed", "s3://bucket/log.txt")
    assert result.dead_letter is False
    assert result.next_retry_at == row["next_retry_at"]
    assert result.attempt_seq == 1


def test_the_second_failure_doubles_the_backoff(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.fail(ep, todo_id, owner=OWNER)

    _fail_again(ep, todo_id)

    assert 54.0 <= seconds_until(todo_id, "next_retry_at") <= 66.0  # 60 s ± 10 %
    assert [(a["seq"], a["disposition"]) for a in attempt_rows(todo_id)] == [
        (1, "retry_scheduled"),
        (2, "retry_scheduled"),
    ]
    assert todo_row(todo_id)["attempt"] == 2


def test_the_backoff_follows_the_runtime_base_and_stops_at_the_maximum(
    personas: Personas,
) -> None:
    runtime_settings.put("retry_base_seconds", 100)
    runtime_settings.put("retry_max_seconds", 150)
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    lifecycle.fail(ep, todo_id, owner=OWNER)
    assert 90.0 <= seconds_until(todo_id, "next_retry_at") <= 110.0

    _fail_again(ep, todo_id)  # 200 s, capped at 150
    assert 135.0 <= seconds_until(todo_id, "next_retry_at") <= 165.0


def test_the_backoff_is_jittered(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    delays = set()
    for _ in range(6):
        todo_id = claimed(ep).todo.id
        lifecycle.fail(ep, todo_id, owner=OWNER)
        delays.add(round(seconds_until(todo_id, "next_retry_at"), 6))

    assert len(delays) > 1
    assert all(27.0 <= d <= 33.0 for d in delays)


def test_retry_after_seconds_overrides_the_backoff(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    result = lifecycle.fail(ep, todo_id, owner=OWNER, retry_after_seconds=7)

    assert seconds_until(todo_id, "next_retry_at") == 7.0
    assert result.dead_letter is False
    assert only_attempt(todo_id)["disposition"] == "retry_scheduled"


def test_a_retry_that_would_fall_past_finish_by_dead_letters_at_once(personas: Personas) -> None:
    """No claim hands a todo out after its finish_by, so a retry due later is no retry: the
    answer says dead letter, not a retry the deadline would cancel."""
    ep = personas.endpoint_a.id
    soon = timezone.now() + dt.timedelta(seconds=60)
    todo_id = claimed(ep, finish_by=soon).todo.id

    result = lifecycle.fail(ep, todo_id, owner=OWNER, retry_after_seconds=600)

    assert result.dead_letter is True and result.todo.next_retry_at is None
    assert only_attempt(todo_id)["disposition"] == "dead_lettered"
    in_time = claimed(ep, finish_by=soon + dt.timedelta(seconds=600)).todo.id
    assert lifecycle.fail(ep, in_time, owner=OWNER, retry_after_seconds=60).dead_letter is False


@pytest.mark.parametrize("seconds", [1, 7 * 24 * 3600])
def test_retry_after_seconds_is_accepted_at_its_bounds(personas: Personas, seconds: int) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    lifecycle.fail(ep, todo_id, owner=OWNER, retry_after_seconds=seconds)

    assert seconds_until(todo_id, "next_retry_at") == float(seconds)


def test_a_failure_that_is_not_retryable_dead_letters_at_once(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, max_attempts=5).todo.id

    result = lifecycle.fail(
        ep, todo_id, owner=OWNER, retryable=False, summary="bad input", retry_after_seconds=5
    )

    row = todo_row(todo_id)
    assert (row["state"], row["next_retry_at"]) == ("failed", None)
    assert row["finished_at"] == db_now()
    attempt = only_attempt(todo_id)
    assert (attempt["outcome"], attempt["disposition"]) == ("failed", "dead_lettered")
    assert attempt["summary"] == "bad input"
    assert result.dead_letter is True
    assert result.next_retry_at is None


def test_failing_the_last_attempt_dead_letters(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, max_attempts=2).todo.id
    lifecycle.fail(ep, todo_id, owner=OWNER)

    make_retry_due(todo_id)
    lifecycle.claim(ep, todo_id, owner=OWNER)
    result = lifecycle.fail(ep, todo_id, owner=OWNER, retry_after_seconds=5)

    row = todo_row(todo_id)
    assert (row["state"], row["attempt"], row["next_retry_at"]) == ("failed", 2, None)
    assert row["finished_at"] == db_now()
    assert [(a["outcome"], a["disposition"]) for a in attempt_rows(todo_id)] == [
        ("failed", "retry_scheduled"),
        ("failed", "dead_lettered"),
    ]
    assert result.dead_letter is True


def test_a_single_attempt_todo_dead_letters_on_its_first_failure(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, max_attempts=1).todo.id

    result = lifecycle.fail(ep, todo_id, owner=OWNER)

    assert result.dead_letter is True
    assert todo_row(todo_id)["next_retry_at"] is None
    assert only_attempt(todo_id)["disposition"] == "dead_lettered"


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("retry_after_seconds", {"retry_after_seconds": 0}),
        ("retry_after_seconds", {"retry_after_seconds": -1}),
        ("retry_after_seconds", {"retry_after_seconds": 7 * 24 * 3600 + 1}),
        ("retry_after_seconds", {"retry_after_seconds": True}),
        ("retry_after_seconds", {"retry_after_seconds": 1.5}),
        ("retry_after_seconds", {"retry_after_seconds": "5"}),
        ("retryable", {"retryable": "no"}),
        ("retryable", {"retryable": 0}),
    ],
)
def test_fail_with_bad_input_is_invalid_and_changes_nothing(
    personas: Personas, field: str, kwargs: dict[str, Any]
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    before = snapshot(todo_id)

    with pytest.raises(InvalidInput) as excinfo:
        lifecycle.fail(ep, todo_id, owner=OWNER, summary="x", **kwargs)

    assert excinfo.value.field == field
    assert snapshot(todo_id) == before
    assert todo_row(todo_id)["state"] == "claimed"


def test_fail_by_another_owner_is_a_conflict_and_changes_nothing(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict) as excinfo:
        lifecycle.fail(ep, todo_id, owner="someone-else")

    assert excinfo.value.transition == "fail"
    assert snapshot(todo_id) == before


def test_a_retried_fail_answers_the_same_success_and_changes_nothing(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    first = lifecycle.fail(ep, todo_id, owner=OWNER, summary="red")
    before = snapshot(todo_id)

    again = lifecycle.fail(ep, todo_id, owner=OWNER, summary="red, said twice", retryable=False)

    assert again == first
    assert again.next_retry_at is not None and not again.dead_letter
    assert snapshot(todo_id) == before


def test_a_retried_fail_after_the_sweeper_requeued_it_still_succeeds(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.fail(ep, todo_id, owner=OWNER)
    make_retry_due(todo_id)
    assert lifecycle.requeue_due_retries() == (todo_id,)
    before = snapshot(todo_id)

    again = lifecycle.fail(ep, todo_id, owner=OWNER)

    assert (again.todo.state, again.attempt_seq) == ("pending", 1)
    assert snapshot(todo_id) == before


def test_fail_after_the_holders_own_complete_or_reject_is_a_conflict(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    done = claimed(ep).todo.id
    lifecycle.complete(ep, done, owner=OWNER)
    refused = claimed(ep).todo.id
    lifecycle.reject(ep, refused, owner=OWNER)  # closes its attempt failed, too
    before = [snapshot(done), snapshot(refused)]

    for todo_id in (done, refused):
        with pytest.raises(LeaseConflict):
            lifecycle.fail(ep, todo_id, owner=OWNER)

    assert [snapshot(done), snapshot(refused)] == before


def test_fail_after_another_owners_fail_is_a_conflict(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.fail(ep, todo_id, owner=OWNER)
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict):
        lifecycle.fail(ep, todo_id, owner="someone-else")

    assert snapshot(todo_id) == before


def test_fail_from_a_foreign_endpoint_is_not_found(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id
    before = snapshot(todo_id)

    with pytest.raises(TodoNotFound):
        lifecycle.fail(personas.endpoint_b.id, todo_id, owner=OWNER)

    assert snapshot(todo_id) == before


def test_fail_on_an_unknown_todo_is_not_found(personas: Personas) -> None:
    new_todo(personas.endpoint_a.id)

    with pytest.raises(TodoNotFound):
        lifecycle.fail(personas.endpoint_a.id, "td_" + "b" * 20, owner=OWNER)
