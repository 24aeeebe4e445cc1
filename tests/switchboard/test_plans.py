"""Single-todo transitions reach their row through todos_pkey, whatever the statistics say.

The statements run prepared (psycopg prepares after five executions), and PostgreSQL then keeps
a generic plan built from the statistics of the moment. Taken while few leases were in flight,
those statistics make todos_inflight_idx (partial on claimed rows) and todos_board_state_idx
(endpoint, state, …) look cheaper than the primary key for ``state = 'claimed' AND endpoint_id
= …``, and such a plan walks every lease in flight on each heartbeat
(docs/decisions/0003-primary-key-guards.md). These tests build those statistics and read each
statement's generic plan (PostgreSQL 15 has no EXPLAIN (GENERIC_PLAN): PREPARE with declared
types, then EXPLAIN EXECUTE under plan_cache_mode = force_generic_plan).
"""

from __future__ import annotations

import json
import re
from typing import Any

import psycopg
import pytest
from django.db import connection

from tests.base import Personas
from tests.plans import plan_nodes
from tests.reach import OWNER, claimed
from todos import lifecycle

# Every parameter the statements below take, with its type.
TYPES = {
    "id": "text",
    "endpoint_id": "uuid",
    "owner": "text",
    "token_hash": "bytea",
    "ttl_seconds": "int",
    "result": "jsonb",
    "summary": "text",
    "summary_truncated": "boolean",
    "artifact": "text",
    "retryable": "boolean",
    "retry_after_seconds": "int",
    "retry_base_seconds": "int",
    "retry_max_seconds": "int",
    "to_state": "text",
    "input_request": "jsonb",
    "response": "jsonb",
    "scope_human_id": "bigint",
    "scope_endpoint_id": "uuid",
    "queues": "text[]",
    "attempts_cap": "int",
    "claimer_kind": "text",
    "claimer_endpoint_id": "uuid",
    "claimer_session": "text",
    "claimant": "text",
    "limit": "int",
    "activity_kind": "text",
    "actor_kind": "text",
    "actor_ref": "text",
    "activity_message": "text",
    "activity_truncated": "boolean",
    "activity_action": "text",
    "activity_detail": "jsonb",
    "note": "text",
    "note_truncated": "boolean",
    "notes_cap": "int",
    "activity_cap": "int",
    "trace_id": "bytea",
}
# RESUME and RETRY (states other than claimed, the human's scope), the claim by id, CANCEL and
# IN_SCOPE have no index competing with the primary key today, so they pass written plainly;
# they are here for the next index.
STATEMENTS = [
    "HEARTBEAT",
    "HEARTBEAT_NOTE",
    "OPERATOR_EXTEND",
    "COMPLETE",
    "OPERATOR_COMPLETE",
    "FAIL",
    "OPERATOR_FAIL",
    "RELEASE",
    "OPERATOR_RELEASE",
    "REJECT",
    "INTERRUPT",
    "RESUME",
    "RESUME_BY_REQUESTER",
    "RETRY",
    "CLAIM",
    "OPERATOR_CLAIM",
    "CANCEL",
    "IN_SCOPE",
]


@pytest.fixture
def few_leases_in_the_statistics(personas: Personas) -> Personas:
    """A thousand finished todos, each with its closed attempt, and a hundred pending ones,
    analyzed with no lease in flight; then twenty leases taken, which the statistics do not know
    of."""
    ep = personas.endpoint_a.id
    with connection.cursor() as cur:
        cur.execute(
            """INSERT INTO todos (id, endpoint_id, queue, title, state, attempt, attempts_total,
                                  finished_at)
               SELECT u.id, %s, 'triage', 'done', 'completed', 1, 1, now()
                 FROM unnest(%s::text[]) AS u(id)""",
            [ep, [lifecycle.new_todo_id() for _ in range(1_000)]],
        )
        cur.execute(
            """INSERT INTO todo_attempts (todo_id, seq, attempt, claimer_kind, owner,
                                          lease_expires_at, ended_at, outcome, disposition)
               SELECT id, 1, 1, 'endpoint', 'endpoint:done', now(), now(), 'completed', 'done'
                 FROM todos WHERE state = 'completed'"""
        )
        cur.execute(
            """INSERT INTO todos (id, endpoint_id, queue, title)
               SELECT u.id, %s, 'triage', 'waiting' FROM unnest(%s::text[]) AS u(id)""",
            [ep, [lifecycle.new_todo_id() for _ in range(100)]],
        )
        cur.execute("ANALYZE todos, todo_attempts")
    for _ in range(20):
        claimed(ep)
    return personas


def _generic_plan(sql: str, values: dict[str, Any]) -> dict[str, Any]:
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    text = re.sub(r"%\((\w+)\)s", number, sql)
    raw = connection.connection
    assert raw is not None
    cur = psycopg.ClientCursor(raw)
    cur.execute("SET LOCAL plan_cache_mode = force_generic_plan")
    cur.execute(f"PREPARE plan_probe ({', '.join(TYPES[n] for n in names)}) AS {text}")
    try:
        args = ", ".join(f"%s::{TYPES[n]}" for n in names)
        cur.execute(
            f"EXPLAIN (FORMAT JSON) EXECUTE plan_probe ({args})", [values.get(n) for n in names]
        )
        row = cur.fetchone()
    finally:
        cur.execute("DEALLOCATE plan_probe")
    assert row is not None
    plan: dict[str, Any] = row[0][0]["Plan"]
    return plan


def _values(personas: Personas) -> dict[str, Any]:
    """A value for every parameter the statements take (the plan is generic, so only the types
    matter, and a value where EXPLAIN EXECUTE needs one)."""
    return {
        "id": "td_aaaaaaaaaaaaaaaaaaaa",
        "endpoint_id": personas.endpoint_a.id,
        "scope_endpoint_id": personas.endpoint_a.id,
        "claimer_endpoint_id": personas.endpoint_a.id,
        "owner": OWNER,
        "queues": ["triage"],
        "claimer_kind": "endpoint",
        "attempts_cap": 50,
        "ttl_seconds": 300,
        "scope_human_id": personas.alice.id,
        "summary_truncated": False,
        "retryable": True,
        "retry_base_seconds": 30,
        "retry_max_seconds": 3600,
        "to_state": "input-required",
        "limit": 500,
    }


@pytest.mark.django_db
@pytest.mark.parametrize("name", STATEMENTS)
def test_a_single_todo_transition_reads_todos_only_through_its_primary_key(
    few_leases_in_the_statistics: Personas, name: str
) -> None:
    values = _values(few_leases_in_the_statistics)

    sqls = getattr(lifecycle, name)
    for sql in sqls.values() if isinstance(sqls, dict) else [sqls]:
        _reads_todos_by_primary_key(name, _generic_plan(sql, values))


def _reads_todos_by_primary_key(name: str, plan: dict[str, Any]) -> None:
    scans = [node for node in plan_nodes(plan) if node.get("Relation Name") == "todos"]
    reads = [node for node in scans if node["Node Type"] != "ModifyTable"]
    assert reads, f"{name}: no read of todos in {plan}"
    for node in reads:
        assert node["Node Type"] == "Index Scan", (name, node)
        assert node["Index Name"] == "todos_pkey", (name, node)


def _statements_reading_attempts() -> list[tuple[str, str]]:
    found = []
    for name, value in vars(lifecycle).items():
        variants = value.items() if isinstance(value, dict) else [("", value)]
        for key, sql in variants:
            if name.isupper() and isinstance(sql, str) and "todo_attempts" in sql:
                found.append((f"{name}[{key}]" if key != "" else name, sql))
    return found


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "sql"), _statements_reading_attempts())
def test_no_statement_hashes_the_open_attempts(
    few_leases_in_the_statistics: Personas, name: str, sql: str
) -> None:
    """A correlated EXISTS on todo_attempts (the "current attempt" guard, the claim's
    prior_stale) may be planned as a hashed subplan: every open attempt read and hashed on each
    call, O(leases in flight) per transition, which is what statistics showing few open attempts
    make the planner pick. Each must stay a per-row probe (OFFSET 0 in the subquery)."""
    values = _values(few_leases_in_the_statistics)

    plan = _generic_plan(sql, values)

    # A hashed subplan shows as "hashed SubPlan N" in its parent's conditions. Hashing the
    # human's endpoints (HUMAN_SCOPE_SQL, uncorrelated) is fine: it is bounded by one owner.
    hashed = set(re.findall(r"hashed (SubPlan \d+)", json.dumps(plan)))
    for node in plan_nodes(plan):
        if node.get("Subplan Name") in hashed:
            relations = {n.get("Relation Name") for n in plan_nodes(node)}
            assert "todo_attempts" not in relations, (name, node)
