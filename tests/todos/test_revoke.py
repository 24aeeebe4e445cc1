"""revoke_endpoint: the owning human revokes an endpoint; its unfinished todos are dead-lettered."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from switchboard.models import Endpoint
from tests.base import Personas
from tests.reach import OWNER, claimed, new_todo
from tests.rows import attempt_rows, db_now, only_attempt, snapshot, todo_row
from todos import lifecycle


def _estate(ep: UUID) -> dict[str, str]:
    """One todo of ``ep`` in each state revoke must handle, by name."""
    ids = {"pending": new_todo(ep).id}
    ids["claimed"] = claimed(ep).todo.id
    ids["interrupted"] = claimed(ep).todo.id
    lifecycle.interrupt(ep, ids["interrupted"], owner=OWNER, state="auth-required")
    ids["awaiting_retry"] = claimed(ep).todo.id
    lifecycle.fail(ep, ids["awaiting_retry"], owner=OWNER)
    ids["completed"] = claimed(ep).todo.id
    lifecycle.complete(ep, ids["completed"], owner=OWNER)
    ids["dead_letter"] = claimed(ep).todo.id
    lifecycle.fail(ep, ids["dead_letter"], owner=OWNER, retryable=False)
    return ids


def _snapshots(ids: dict[str, str]) -> dict[str, Any]:
    return {name: snapshot(todo_id) for name, todo_id in ids.items()}


def test_revoke_dead_letters_pending_and_in_flight_todos(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    ids = _estate(ep)
    untouched = {k: snapshot(ids[k]) for k in ("completed", "dead_letter")}

    result = lifecycle.revoke_endpoint(personas.alice.id, ep)

    assert result.endpoint_revoked is True
    hit = ("pending", "claimed", "interrupted", "awaiting_retry")
    assert sorted(result.dead_lettered) == sorted(ids[k] for k in hit)
    for name in hit:
        row = todo_row(ids[name])
        assert (row["state"], row["next_retry_at"], row["owner"]) == ("failed", None, None), name
        assert row["finished_at"] == db_now(), name
    for name in ("claimed", "interrupted"):
        attempt = only_attempt(ids[name])
        assert (attempt["outcome"], attempt["disposition"]) == ("revoked", "dead_lettered")
        assert attempt["ended_at"] == db_now()
    assert attempt_rows(ids["pending"]) == []
    assert only_attempt(ids["awaiting_retry"])["outcome"] == "failed"  # closed before, kept
    assert {k: snapshot(ids[k]) for k in ("completed", "dead_letter")} == untouched
    assert Endpoint.objects.get(id=ep).revoked_at is not None


def test_revoke_leaves_other_endpoints_todos_alone(personas: Personas) -> None:
    bobs = claimed(personas.endpoint_b.id).todo.id
    before = snapshot(bobs)

    lifecycle.revoke_endpoint(personas.alice.id, personas.endpoint_a.id)

    assert snapshot(bobs) == before


def test_revoking_twice_changes_nothing_the_second_time(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    ids = _estate(ep)
    lifecycle.revoke_endpoint(personas.alice.id, ep)
    revoked_at = Endpoint.objects.get(id=ep).revoked_at
    before = _snapshots(ids)

    result = lifecycle.revoke_endpoint(personas.alice.id, ep)

    assert (result.endpoint_revoked, result.dead_lettered) == (False, ())
    assert _snapshots(ids) == before
    assert Endpoint.objects.get(id=ep).revoked_at == revoked_at


def test_revoke_by_a_human_who_does_not_own_the_endpoint_changes_nothing(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    ids = _estate(ep)
    before = _snapshots(ids)

    result = lifecycle.revoke_endpoint(personas.bob.id, ep)

    assert (result.endpoint_revoked, result.dead_lettered) == (False, ())
    assert _snapshots(ids) == before
    assert Endpoint.objects.get(id=ep).revoked_at is None
