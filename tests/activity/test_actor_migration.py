"""activity/migrations/0002_actor_spellings.py: rows written in the old spellings of who acted
are rewritten to the one spelling (switchboard/lib/actors.py), and back, with the migration
executor on a real database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from switchboard.lib.sql import fetch_all, fetch_one
from tests.base import Personas
from todos import lifecycle

BEFORE = [("activity", "0001_todo_activity")]
AFTER = [("activity", "0002_actor_spellings")]

# A row as the code of 0001's time wrote it (tests/activity/helpers.py's ``record`` writes it
# as today's code does, with the todo's endpoint_id, a column 0001's table does not have).
_OLD_ROW = """
WITH s AS (
    UPDATE todos SET activity_seq = activity_seq + 1 WHERE id = %(todo_id)s
    RETURNING activity_seq
)
INSERT INTO todo_activity (todo_id, seq, attempt_seq, kind, actor_kind, actor_ref, detail)
SELECT %(todo_id)s, s.activity_seq, %(attempt_seq)s, %(kind)s, %(actor_kind)s, %(actor_ref)s,
       %(detail)s::jsonb
  FROM s
RETURNING seq
"""


def record(
    todo_id: str,
    kind: str,
    *,
    actor_kind: str,
    actor_ref: str,
    attempt_seq: int | None = None,
    detail: dict[str, Any] | None = None,
) -> int:
    row = fetch_one(
        _OLD_ROW,
        {
            "todo_id": todo_id,
            "kind": kind,
            "actor_kind": actor_kind,
            "actor_ref": actor_ref,
            "attempt_seq": attempt_seq,
            "detail": json.dumps(detail or {}),
        },
    )
    assert row is not None
    return int(row["seq"])


def _migrate(targets: list[tuple[str, str]]) -> None:
    MigrationExecutor(connection).migrate(targets)  # a fresh loader reads what is applied now


@pytest.fixture
def old_spellings() -> Iterator[None]:
    """Start before the rewrite (so the rows below are written as the old code wrote them);
    leave every app fully migrated, whatever the test did or where it failed."""
    _migrate(BEFORE)
    yield
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def _refs(todo_id: str) -> dict[int, tuple[str, str]]:
    rows = fetch_all(
        "SELECT seq, actor_kind, actor_ref FROM todo_activity WHERE todo_id = %(id)s",
        {"id": todo_id},
    )
    return {row["seq"]: (row["actor_kind"], row["actor_ref"]) for row in rows}


def _write_old_rows(personas: Personas) -> dict[str, Any]:
    ep = personas.endpoint_a
    todo = lifecycle.create(ep.id, queue="triage", title="old spellings")
    lifecycle.claim(ep.id, todo.id, owner="worker-7")
    seqs = {
        "note": record(todo.id, "note", actor_kind="endpoint", actor_ref="worker-7", attempt_seq=1),
        "interrupt": record(
            todo.id,
            "a2a_state",
            actor_kind="endpoint",
            actor_ref="worker-7",
            attempt_seq=1,
            detail={"action": "interrupt"},
        ),
        "answer": record(
            todo.id,
            "a2a_state",
            actor_kind="endpoint",
            actor_ref=f"a2a:{ep.slug}",
            detail={"action": "resume"},
        ),
        "cancel": record(
            todo.id,
            "a2a_state",
            actor_kind="endpoint",
            actor_ref=f"endpoint:{ep.id}",
            detail={"action": "cancel"},
        ),
        "orphan": record(todo.id, "note", actor_kind="endpoint", actor_ref="gone-agent"),
        "human": record(
            todo.id, "human_action", actor_kind="human", actor_ref=f"human:{personas.alice.id}"
        ),
        "sweeper": record(todo.id, "retried", actor_kind="system", actor_ref="sweeper"),
        "doorbell": record(todo.id, "rung", actor_kind="system", actor_ref="doorbell"),
    }
    # An MCP agent's lease, as MCP spelled its owner: endpoint:<slug>.
    mcp = lifecycle.create(ep.id, queue="triage", title="held over MCP")
    lifecycle.claim(ep.id, mcp.id, owner=f"endpoint:{ep.slug}")
    mcp_note = record(
        mcp.id, "note", actor_kind="endpoint", actor_ref=f"endpoint:{ep.slug}", attempt_seq=1
    )
    fetch_all(
        "UPDATE todos SET input_request = %(ir)s::jsonb WHERE id = %(id)s",
        {"id": todo.id, "ir": '{"response": {"text": "eu", "from": "human:alice"}}'},
    )
    fetch_all(
        "INSERT INTO queue_pauses (endpoint_id, queue, paused_by_kind, paused_by)"
        " VALUES (%(ep)s, 'triage', 'system', 'manage.py')",
        {"ep": ep.id},
    )
    return {"todo": todo.id, "seqs": seqs, "mcp": mcp.id, "mcp_note": mcp_note}


def _owners(todo_id: str) -> tuple[str, str]:
    row = fetch_one(
        "SELECT t.owner, a.owner AS attempt_owner FROM todos t"
        " JOIN todo_attempts a ON a.todo_id = t.id AND a.seq = t.attempts_total"
        " WHERE t.id = %(id)s",
        {"id": todo_id},
    )
    assert row is not None
    return row["owner"], row["attempt_owner"]


def _answer_from(todo_id: str) -> str:
    row = fetch_one(
        "SELECT input_request #>> '{response,from}' AS f FROM todos WHERE id = %(id)s",
        {"id": todo_id},
    )
    assert row is not None
    return str(row["f"])


def _paused_by() -> str:
    row = fetch_one("SELECT paused_by FROM queue_pauses", {})
    assert row is not None
    return str(row["paused_by"])


@pytest.mark.django_db(transaction=True)
def test_the_old_spellings_are_rewritten_to_one_and_back(
    personas: Personas, old_spellings: None
) -> None:
    written = _write_old_rows(personas)
    todo_id, seq = written["todo"], written["seqs"]
    ep, alice = personas.endpoint_a, personas.alice
    old = _refs(todo_id)
    mcp, old_mcp = written["mcp"], _refs(written["mcp"])
    assert _owners(mcp) == (f"endpoint:{ep.slug}",) * 2
    assert _owners(todo_id) == ("worker-7",) * 2

    _migrate(AFTER)

    new = _refs(todo_id)
    assert new[seq["note"]] == ("endpoint", f"endpoint:{ep.id}")
    assert new[seq["interrupt"]] == ("endpoint", f"endpoint:{ep.id}")
    assert new[seq["orphan"]] == ("endpoint", f"endpoint:{ep.id}")
    assert new[seq["answer"]] == ("endpoint", f"requester:{ep.id}")
    assert new[seq["cancel"]] == ("endpoint", f"requester:{ep.id}")
    for kept in ("human", "sweeper", "doorbell"):
        assert new[seq[kept]] == old[seq[kept]]
    assert _answer_from(todo_id) == f"human:{alice.id}"
    assert _paused_by() == "command:queue"
    # The lease MCP holds is spelled as the upgraded server spells it; a label is kept.
    assert _owners(mcp) == (f"endpoint:{ep.id}",) * 2
    assert _owners(todo_id) == ("worker-7",) * 2
    assert _refs(mcp)[written["mcp_note"]] == ("endpoint", f"endpoint:{ep.id}")

    _migrate(BEFORE)

    back = _refs(todo_id)
    # Every row gets its old spelling back but the note that named no attempt: its label is
    # nowhere else, so it keeps the new one.
    assert back == old | {seq["orphan"]: ("endpoint", f"endpoint:{ep.id}")}
    assert _answer_from(todo_id) == "human:alice"
    assert _paused_by() == "manage.py"
    assert _owners(mcp) == (f"endpoint:{ep.slug}",) * 2
    assert _refs(mcp) == old_mcp

    _migrate(AFTER)

    assert _refs(todo_id) == new


@pytest.mark.django_db(transaction=True)
def test_the_rewrite_walks_the_table_in_batches(
    personas: Personas, old_spellings: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    migration = importlib.import_module("activity.migrations.0002_actor_spellings")
    monkeypatch.setattr(migration, "BATCH", 2)
    ep = personas.endpoint_a
    todo = lifecycle.create(ep.id, queue="triage", title="many rows")
    for _ in range(7):
        record(todo.id, "note", actor_kind="endpoint", actor_ref="worker-7")

    _migrate(AFTER)

    refs = {ref for _, ref in _refs(todo.id).values()}
    assert refs == {f"endpoint:{ep.id}"}
