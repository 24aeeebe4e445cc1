"""heartbeat: the holder extends its lease; the attempt row is written at most once a minute."""

from __future__ import annotations

import json
from typing import Any

import pytest

from activity.models import TodoActivity
from switchboard.lib.errors import InvalidInput, LeaseConflict, TodoNotFound
from switchboard.lib.sql import fetch_all
from tests.base import Personas
from tests.plans import plan_nodes
from tests.reach import OWNER, claimed, expire_lease, new_todo
from tests.rows import db_now, only_attempt, seconds_until, snapshot, todo_row
from todos import lifecycle


def _set_last_heartbeat(todo_id: str, seconds_ago: int) -> None:
    """Age the attempt's last heartbeat write, and the todo's record of it, as time would."""
    fetch_all(
        "WITH a AS (UPDATE todo_attempts SET last_heartbeat_at = now() - %(s)s * interval '1 s'"
        "            WHERE todo_id = %(id)s AND ended_at IS NULL)"
        " UPDATE todos SET attempt_heartbeat_at = now() - %(s)s * interval '1 s'"
        "  WHERE id = %(id)s",
        {"id": todo_id, "s": seconds_ago},
    )


def test_heartbeat_extends_the_todo_lease_and_stamps_the_attempt(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, lease_ttl_seconds=60).todo.id

    result = lifecycle.heartbeat(ep, todo_id, owner=OWNER, lease_ttl_seconds=600)

    assert seconds_until(todo_id, "lease_expires_at") == 600
    row = todo_row(todo_id)
    assert (row["state"], row["owner"]) == ("claimed", OWNER)
    attempt = only_attempt(todo_id)
    # The first heartbeat always writes the attempt (last_heartbeat_at was null).
    assert attempt["last_heartbeat_at"] == db_now()
    assert attempt["lease_expires_at"] == row["lease_expires_at"]
    assert attempt["ended_at"] is None
    assert result.attempt_seq == 1
    assert result.todo.lease_expires_at == row["lease_expires_at"]


def test_heartbeat_without_a_ttl_extends_by_the_ttl_its_claim_chose(personas: Personas) -> None:
    """A claim for 15 s that crashes after a heartbeat holds the todo 15 s more, not the
    default's five minutes; a heartbeat naming a TTL uses its own, once."""
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, lease_ttl_seconds=15).todo.id
    assert todo_row(todo_id)["lease_ttl_seconds"] == 15

    lifecycle.heartbeat(ep, todo_id, owner=OWNER)
    assert seconds_until(todo_id, "lease_expires_at") == 15

    lifecycle.heartbeat(ep, todo_id, owner=OWNER, lease_ttl_seconds=120)
    assert seconds_until(todo_id, "lease_expires_at") == 120
    lifecycle.heartbeat(ep, todo_id, owner=OWNER, note="still going")
    assert seconds_until(todo_id, "lease_expires_at") == 15


@pytest.mark.parametrize("note", ["", "  \n\t"])
def test_a_heartbeat_whose_note_is_only_white_space_keeps_no_note(
    personas: Personas, note: str
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    notes = TodoActivity.objects.filter(todo_id=todo_id, kind="note")

    lifecycle.heartbeat(ep, todo_id, owner=OWNER, note=note)

    assert not notes.exists()
    lifecycle.heartbeat(ep, todo_id, owner=OWNER, note="half way")
    assert [n.message for n in notes] == ["half way"]


def test_heartbeat_without_a_ttl_on_a_default_claim_uses_the_default(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    assert todo_row(todo_id)["lease_ttl_seconds"] == 300
    lifecycle.heartbeat(ep, todo_id, owner=OWNER)
    assert seconds_until(todo_id, "lease_expires_at") == 300
    # A claim made before the claim's TTL was kept falls back to the runtime default.
    fetch_all("UPDATE todos SET lease_ttl_seconds = NULL WHERE id = %(id)s", {"id": todo_id})
    lifecycle.heartbeat(ep, todo_id, owner=OWNER)
    assert seconds_until(todo_id, "lease_expires_at") == 300


def test_an_operator_extend_without_a_ttl_uses_the_claims(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, lease_ttl_seconds=40).todo.id
    lifecycle.operator_extend(personas.alice.id, todo_id)
    assert seconds_until(todo_id, "lease_expires_at") == 40


def test_heartbeat_leaves_the_attempt_alone_within_a_minute_of_the_last_write(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.heartbeat(ep, todo_id, owner=OWNER, lease_ttl_seconds=600)
    _set_last_heartbeat(todo_id, 30)
    before = only_attempt(todo_id)

    lifecycle.heartbeat(ep, todo_id, owner=OWNER, lease_ttl_seconds=900)

    assert seconds_until(todo_id, "lease_expires_at") == 900
    assert only_attempt(todo_id) == before


def test_heartbeat_moves_the_attempt_once_its_last_write_is_over_a_minute_old(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.heartbeat(ep, todo_id, owner=OWNER, lease_ttl_seconds=600)
    _set_last_heartbeat(todo_id, 120)
    stale = only_attempt(todo_id)["last_heartbeat_at"]

    lifecycle.heartbeat(ep, todo_id, owner=OWNER, lease_ttl_seconds=1200)

    attempt = only_attempt(todo_id)
    assert attempt["last_heartbeat_at"] == db_now() != stale
    assert attempt["lease_expires_at"] == todo_row(todo_id)["lease_expires_at"]
    assert seconds_until(todo_id, "lease_expires_at") == 1200


def test_heartbeat_by_another_owner_is_a_conflict_and_changes_nothing(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict) as excinfo:
        lifecycle.heartbeat(ep, todo_id, owner="someone-else", lease_ttl_seconds=600)

    assert excinfo.value.transition == "heartbeat"
    assert snapshot(todo_id) == before


def test_heartbeat_from_a_foreign_endpoint_is_not_found(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id
    before = snapshot(todo_id)

    with pytest.raises(TodoNotFound):
        lifecycle.heartbeat(personas.endpoint_b.id, todo_id, owner=OWNER)

    assert snapshot(todo_id) == before


def test_heartbeat_on_a_pending_todo_is_a_conflict(personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id)
    before = snapshot(todo.id)

    with pytest.raises(LeaseConflict):
        lifecycle.heartbeat(personas.endpoint_a.id, todo.id, owner=OWNER)

    assert snapshot(todo.id) == before


def test_heartbeat_after_the_todo_completed_is_a_conflict(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.complete(ep, todo_id, owner=OWNER)
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict):
        lifecycle.heartbeat(ep, todo_id, owner=OWNER)

    assert snapshot(todo_id) == before


def test_heartbeat_by_the_holder_of_a_taken_over_lease_is_a_conflict(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, owner="worker-slow").todo.id
    expire_lease(todo_id)
    lifecycle.claim(ep, todo_id, owner="worker-new")
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict):
        lifecycle.heartbeat(ep, todo_id, owner="worker-slow")

    assert snapshot(todo_id) == before


def test_heartbeat_renews_a_lapsed_lease_nobody_has_taken(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    expire_lease(todo_id)

    lifecycle.heartbeat(ep, todo_id, owner=OWNER, lease_ttl_seconds=60)

    assert seconds_until(todo_id, "lease_expires_at") == 60
    assert only_attempt(todo_id)["ended_at"] is None


@pytest.mark.parametrize("ttl", [9, 86401, True, "60"])
def test_heartbeat_with_a_bad_ttl_is_invalid_and_changes_nothing(
    personas: Personas, ttl: Any
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    before = snapshot(todo_id)

    with pytest.raises(InvalidInput) as excinfo:
        lifecycle.heartbeat(ep, todo_id, owner=OWNER, lease_ttl_seconds=ttl)

    assert excinfo.value.field == "lease_ttl_seconds"
    assert snapshot(todo_id) == before


def _attempt_pages_read(todo_id: str, endpoint_id: Any) -> tuple[int, int]:
    """Run the agent heartbeat under EXPLAIN ANALYZE; return (pages of todo_attempts read,
    attempt rows written)."""
    params = {
        "id": todo_id,
        "endpoint_id": endpoint_id,
        "owner": OWNER,
        "token_hash": None,
        "ttl_seconds": 600,
        "ttl_default": 300,
    }
    # The test's todo_attempts is a page or two, which the planner may rather read whole than
    # probe (it did, once other tests had analyzed it); a live table is probed by its key.
    fetch_all("SET LOCAL enable_seqscan = off", {})
    (row,) = fetch_all(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {lifecycle.HEARTBEAT}", params)
    document = row["QUERY PLAN"]
    if isinstance(document, str):
        document = json.loads(document)

    pages = written = 0
    for node in plan_nodes(document[0]["Plan"]):
        if node.get("Relation Name") != "todo_attempts":
            continue
        pages += node.get("Shared Hit Blocks", 0) + node.get("Shared Read Blocks", 0)
        if node["Node Type"] == "ModifyTable":
            written += node["Plans"][0]["Actual Rows"]
    return pages, written


def test_a_heartbeat_with_no_attempt_write_due_reads_no_attempt_page(
    personas: Personas,
) -> None:
    # Heartbeat sampling (docs/decisions/0006-heartbeat-sampling.md): most heartbeats are one
    # update of the todo row; the fence and the "is the write due" check read the todo's copies
    # (migrations/0003), not the attempt.
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.heartbeat(ep, todo_id, owner=OWNER)
    _set_last_heartbeat(todo_id, 30)

    assert _attempt_pages_read(todo_id, ep) == (0, 0)

    _set_last_heartbeat(todo_id, 90)
    pages, written = _attempt_pages_read(todo_id, ep)
    assert written == 1
    assert pages > 0
