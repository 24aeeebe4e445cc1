"""reap: lapsed leases go back to pending, or to the dead letter when the budget is spent."""

from __future__ import annotations

from tests.base import Personas
from tests.reach import OWNER, claimed, expire_lease, new_todo
from tests.rows import attempt_rows, db_now, only_attempt, snapshot, todo_row
from todos import lifecycle


def test_reap_requeues_a_lapsed_lease_with_budget_left(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, max_attempts=3).todo.id
    expire_lease(todo_id)

    result = lifecycle.reap()

    assert result.requeued == (todo_id,)
    assert result.dead_lettered == ()
    row = todo_row(todo_id)
    assert row["state"] == "pending"
    assert (row["owner"], row["lease_expires_at"], row["finished_at"]) == (None, None, None)
    assert row["attempt"] == 1
    attempt = only_attempt(todo_id)
    assert (attempt["outcome"], attempt["disposition"]) == ("reaped", "requeued")
    assert attempt["ended_at"] == db_now()


def test_reap_dead_letters_a_lapsed_lease_whose_budget_is_spent(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, max_attempts=1).todo.id
    expire_lease(todo_id)

    result = lifecycle.reap()

    assert result.dead_lettered == (todo_id,)
    assert result.requeued == ()
    row = todo_row(todo_id)
    assert (row["state"], row["next_retry_at"], row["owner"]) == ("failed", None, None)
    assert row["finished_at"] == db_now()
    attempt = only_attempt(todo_id)
    assert (attempt["outcome"], attempt["disposition"]) == ("reaped", "dead_lettered")


def test_reap_leaves_live_leases_and_unclaimed_todos_alone(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    live = claimed(ep).todo.id
    pending = new_todo(ep).id
    waiting = claimed(ep).todo.id
    lifecycle.fail(ep, waiting, owner=OWNER)
    before = [snapshot(i) for i in (live, pending, waiting)]

    result = lifecycle.reap()

    assert (result.requeued, result.dead_lettered) == ((), ())
    assert [snapshot(i) for i in (live, pending, waiting)] == before


def test_reap_takes_every_endpoints_lapsed_leases(personas: Personas) -> None:
    alices = claimed(personas.endpoint_a.id).todo.id
    bobs = claimed(personas.endpoint_b.id).todo.id
    expire_lease(alices)
    expire_lease(bobs)

    result = lifecycle.reap()

    assert sorted(result.requeued) == sorted([alices, bobs])
    assert todo_row(alices)["state"] == todo_row(bobs)["state"] == "pending"


def test_reap_stops_at_its_limit(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    ids = [claimed(ep).todo.id for _ in range(3)]
    for todo_id in ids:
        expire_lease(todo_id)

    first = lifecycle.reap(limit=2)

    assert len(first.requeued) == 2
    left = [i for i in ids if i not in first.requeued]
    assert len(left) == 1
    assert todo_row(left[0])["state"] == "claimed"
    assert only_attempt(left[0])["ended_at"] is None
    assert lifecycle.reap(limit=2).requeued == tuple(left)


def test_a_reaped_attempt_reads_as_died_on_the_next_claim(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    expire_lease(todo_id)
    lifecycle.reap()

    result = lifecycle.claim_next(ep, ["default"], owner="worker-2")

    assert result is not None and result.todo.id == todo_id
    assert result.took_over is False  # the reaper closed it; the claim found it pending
    assert [(a.outcome, a.died) for a in result.prior_attempts] == [("reaped", True)]
    assert [a["outcome"] for a in attempt_rows(todo_id)] == ["reaped", None]
