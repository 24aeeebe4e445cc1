"""complete: the holder finishes its todo; the open attempt closes completed/done."""

from __future__ import annotations

import pytest

from switchboard.lib.errors import InvalidInput, LeaseConflict, TodoNotFound
from tests.base import Personas
from tests.reach import OWNER, claimed, expire_lease, make_retry_due, new_todo
from tests.rows import attempt_rows, db_now, only_attempt, snapshot, todo_row
from todos import lifecycle


def test_complete_closes_the_open_attempt_completed_done(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    result = lifecycle.complete(
        ep,
        todo_id,
        owner=OWNER,
        result={"pr": 12},
        summary="fixed the flaky test",
        artifact="mcp://cairn/Ab12Cd34",
    )

    row = todo_row(todo_id)
    assert row["state"] == "completed"
    assert row["result"] == {"pr": 12}
    assert (row["owner"], row["lease_expires_at"], row["next_retry_at"]) == (None, None, None)
    assert row["finished_at"] == db_now()
    assert (row["attempt"], row["attempts_total"]) == (1, 1)
    attempt = only_attempt(todo_id)
    assert attempt["ended_at"] == db_now()
    assert (attempt["outcome"], attempt["disposition"]) == ("completed", "done")
    assert attempt["summary"] == "fixed the flaky test"
    assert attempt["summary_truncated"] is False
    assert attempt["artifact"] == "mcp://cairn/Ab12Cd34"
    assert result.attempt_seq == 1
    assert result.todo.state == "completed"


def test_complete_without_a_summary_stores_none(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    lifecycle.complete(ep, todo_id, owner=OWNER, result={"ok": True})

    attempt = only_attempt(todo_id)
    assert (attempt["summary"], attempt["artifact"]) == (None, None)
    assert attempt["outcome"] == "completed"


def test_complete_closes_the_newest_attempt_only(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, owner="worker-dead").todo.id
    expire_lease(todo_id)
    lifecycle.claim(ep, todo_id, owner=OWNER)

    result = lifecycle.complete(ep, todo_id, owner=OWNER, summary="second time lucky")

    dead, done = attempt_rows(todo_id)
    assert (dead["outcome"], dead["summary"]) == ("lease_expired", None)
    assert (done["outcome"], done["summary"]) == ("completed", "second time lucky")
    assert result.attempt_seq == 2


def test_complete_by_another_owner_is_a_conflict_and_changes_nothing(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict) as excinfo:
        lifecycle.complete(ep, todo_id, owner="someone-else", summary="mine now")

    assert excinfo.value.transition == "complete"
    assert snapshot(todo_id) == before


def test_a_retried_complete_answers_the_same_success_and_changes_nothing(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    first = lifecycle.complete(ep, todo_id, owner=OWNER, summary="first", result={"n": 1})
    before = snapshot(todo_id)

    again = lifecycle.complete(ep, todo_id, owner=OWNER, summary="second", result={"n": 2})

    assert again == first
    assert (again.todo.state, again.attempt_seq, again.todo.result) == ("completed", 1, {"n": 1})
    assert snapshot(todo_id) == before  # the retry's summary and result are not stored


def test_a_retried_fenced_complete_needs_the_same_token(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    claim = claimed(ep, require_fence=True)
    todo_id, token = claim.todo.id, claim.lease_token
    first = lifecycle.complete(ep, todo_id, owner=OWNER, lease_token=token)
    before = snapshot(todo_id)

    assert lifecycle.complete(ep, todo_id, owner=OWNER, lease_token=token) == first
    for wrong in (None, "A" * 22):
        with pytest.raises(LeaseConflict):
            lifecycle.complete(ep, todo_id, owner=OWNER, lease_token=wrong)
    assert snapshot(todo_id) == before


def test_complete_after_someone_elses_complete_is_a_conflict(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.complete(ep, todo_id, owner=OWNER, summary="first")
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict):
        lifecycle.complete(ep, todo_id, owner="someone-else", summary="second")

    assert snapshot(todo_id) == before


def test_complete_after_the_holders_own_fail_is_a_conflict(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.fail(ep, todo_id, owner=OWNER)
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict):
        lifecycle.complete(ep, todo_id, owner=OWNER)

    assert snapshot(todo_id) == before


def test_a_complete_retried_after_a_later_attempt_is_a_conflict(personas: Personas) -> None:
    """Only the todo's latest attempt can be repeated: an older attempt's report is stale."""
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.fail(ep, todo_id, owner=OWNER)  # attempt 1 failed, a retry scheduled
    make_retry_due(todo_id)
    lifecycle.claim(ep, todo_id, owner=OWNER)  # attempt 2, same owner
    lifecycle.complete(ep, todo_id, owner=OWNER)
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict):
        lifecycle.fail(ep, todo_id, owner=OWNER)  # attempt 1's fail, retried late

    assert snapshot(todo_id) == before


def test_complete_on_a_pending_todo_is_a_conflict(personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id)
    before = snapshot(todo.id)

    with pytest.raises(LeaseConflict):
        lifecycle.complete(personas.endpoint_a.id, todo.id, owner=OWNER)

    assert snapshot(todo.id) == before


def test_complete_from_a_foreign_endpoint_is_not_found(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id
    before = snapshot(todo_id)

    with pytest.raises(TodoNotFound):
        lifecycle.complete(personas.endpoint_b.id, todo_id, owner=OWNER)

    assert snapshot(todo_id) == before


def test_complete_with_a_result_jsonb_cannot_hold_is_invalid(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    before = snapshot(todo_id)

    with pytest.raises(InvalidInput) as excinfo:
        lifecycle.complete(ep, todo_id, owner=OWNER, result={"log": "a\x00b"})

    assert excinfo.value.field == "result"
    assert snapshot(todo_id) == before
