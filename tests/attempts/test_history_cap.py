"""Bounded history: a per-todo cap prunes the oldest closed attempts at claim; delete cascades."""

from __future__ import annotations

from switchboard import runtime_settings
from switchboard.lib.sql import fetch_all
from tests.base import Personas
from tests.reach import OWNER, claimed_and_released, expire_lease, make_retry_due, new_todo
from tests.rows import attempt_rows, count, open_attempts, todo_row
from todos import lifecycle


def _assert_invariant(todo_id: str) -> None:
    row = todo_row(todo_id)
    assert row["attempts_total"] == len(attempt_rows(todo_id)) + row["attempts_pruned"]


def test_the_cap_keeps_the_newest_attempts_and_counts_the_pruned(personas: Personas) -> None:
    runtime_settings.put("attempts_max_per_todo", 3)
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep, max_attempts=10).id

    claimed_and_released(ep, todo_id, 4)
    result = lifecycle.claim(ep, todo_id, owner=OWNER)

    row = todo_row(todo_id)
    assert (row["attempts_total"], row["attempts_pruned"]) == (5, 2)
    assert [a["seq"] for a in attempt_rows(todo_id)] == [3, 4, 5]
    assert [a["seq"] for a in open_attempts(todo_id)] == [5]
    _assert_invariant(todo_id)
    assert [a.seq for a in result.prior_attempts] == [4, 3]  # pruned ones are not replayed
    assert (result.todo.attempts_total, result.todo.attempts_pruned) == (5, 2)


def test_below_the_cap_nothing_is_pruned(personas: Personas) -> None:
    runtime_settings.put("attempts_max_per_todo", 3)
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep).id

    claimed_and_released(ep, todo_id, 3)

    row = todo_row(todo_id)
    assert (row["attempts_total"], row["attempts_pruned"]) == (3, 0)
    assert [a["seq"] for a in attempt_rows(todo_id)] == [1, 2, 3]


def test_the_invariant_holds_through_takeovers_and_failures(personas: Personas) -> None:
    runtime_settings.put("attempts_max_per_todo", 3)
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep, max_attempts=20).id

    for i in range(8):
        result = lifecycle.claim_next(ep, ["default"], owner=f"worker-{i}")
        assert result is not None and result.attempt_seq == i + 1
        if i % 2 == 0:
            expire_lease(todo_id)  # the next claim takes over
        else:
            lifecycle.fail(ep, todo_id, owner=f"worker-{i}", retry_after_seconds=1)
            make_retry_due(todo_id)
        _assert_invariant(todo_id)
        assert len(attempt_rows(todo_id)) <= 3

    row = todo_row(todo_id)
    assert (row["attempts_total"], row["attempts_pruned"]) == (8, 5)
    assert [a["seq"] for a in attempt_rows(todo_id)] == [6, 7, 8]


def test_a_cap_of_one_never_prunes_the_attempt_a_takeover_is_closing(personas: Personas) -> None:
    # The prune sees the statement's snapshot, where the dead attempt is still open, and prunes
    # closed attempts only, so the takeover keeps it: one row over the cap until the
    # next claim prunes it. Deleting it would race the close on the same row.
    runtime_settings.put("attempts_max_per_todo", 1)
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep).id
    lifecycle.claim(ep, todo_id, owner="worker-dead")
    expire_lease(todo_id)

    result = lifecycle.claim(ep, todo_id, owner="worker-new")

    assert [(a["seq"], a["outcome"]) for a in attempt_rows(todo_id)] == [
        (1, "lease_expired"),
        (2, None),
    ]
    assert [a.seq for a in result.prior_attempts] == [1]
    _assert_invariant(todo_id)

    lifecycle.release(ep, todo_id, owner="worker-new")
    lifecycle.claim(ep, todo_id, owner=OWNER)

    assert [a["seq"] for a in attempt_rows(todo_id)] == [3]  # back within the cap
    assert todo_row(todo_id)["attempts_pruned"] == 2
    _assert_invariant(todo_id)


def test_the_cap_is_per_todo(personas: Personas) -> None:
    runtime_settings.put("attempts_max_per_todo", 2)
    ep = personas.endpoint_a.id
    busy = new_todo(ep, max_attempts=10).id
    quiet = new_todo(ep).id
    claimed_and_released(ep, quiet, 2)

    claimed_and_released(ep, busy, 4)

    assert [a["seq"] for a in attempt_rows(quiet)] == [1, 2]
    assert [a["seq"] for a in attempt_rows(busy)] == [3, 4]
    assert todo_row(quiet)["attempts_pruned"] == 0


def test_deleting_a_todo_deletes_its_attempts(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    gone = new_todo(ep).id
    claimed_and_released(ep, gone, 2)
    lifecycle.claim(ep, gone, owner=OWNER)
    kept = new_todo(ep).id
    claimed_and_released(ep, kept, 1)
    assert count("todo_attempts") == 4

    fetch_all("DELETE FROM todos WHERE id = %(id)s", {"id": gone})

    assert attempt_rows(gone) == []
    assert count("todo_attempts") == 1
    assert [a["seq"] for a in attempt_rows(kept)] == [1]
