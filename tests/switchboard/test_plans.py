"""Single-todo transitions reach their row through todos_pkey, whatever the statistics say, and
claim_next reads only the heads of the queues it asks for.

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

import pytest
from django.db import connection

from tests.base import Personas
from tests.plans import generic_plan, plan_nodes
from tests.reach import OWNER, claimed
from todos import lifecycle
from todos.lifecycle import statements

# Every parameter the statements below take, with its type.
TYPES = {
    "id": "text",
    "endpoint_id": "uuid",
    "owner": "text",
    "token_hash": "bytea",
    "outcome": "text",
    "ttl_seconds": "int",
    "ttl_default": "int",
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
    "queue": "text",
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
    "gate_seconds": "int",
    "ring_id": "uuid",
    "reason": "text",
    "ringer": "text",
    "subscribers": "int",
    "seen_at": "timestamptz",
    "ids": "text[]",
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
    "RESUME_BY_HUMAN",
    "RESUME_BY_REQUESTER",
    "RETRY",
    "RETRY_BY_REQUESTER",
    "CLAIM",
    "OPERATOR_CLAIM",
    "CANCEL_BY_HUMAN",
    "CANCEL_BY_REQUESTER",
    "IN_ENDPOINT_SCOPE",
    "IN_HUMAN_SCOPE",
    "REPORTED",
    # The holder's miss: was its claim ended by someone else (todos/sql/ended.sql).
    "ENDED",
    # The ring's gate is on last_ringed_at, which todos_pending_ring_idx holds.
    "RING",
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
            """INSERT INTO todo_attempts (todo_id, endpoint_id, seq, attempt, claimer_kind,
                                          owner, lease_expires_at, ended_at, outcome, disposition)
               SELECT id, endpoint_id, 1, 1, 'endpoint', 'endpoint:done', now(), now(),
                      'completed', 'done'
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


def _generic_plan(sql: str, values: dict[str, Any], *, analyze: bool = False) -> dict[str, Any]:
    return generic_plan(sql, values, TYPES, analyze=analyze)


def _values(personas: Personas) -> dict[str, Any]:
    """A value for every parameter the statements take (the plan is generic, so only the types
    matter, and a value where EXPLAIN EXECUTE needs one)."""
    return {
        "id": "td_aaaaaaaaaaaaaaaaaaaa",
        "endpoint_id": personas.endpoint_a.id,
        "scope_endpoint_id": personas.endpoint_a.id,
        "claimer_endpoint_id": personas.endpoint_a.id,
        "owner": OWNER,
        "queue": "triage",
        "queues": ["triage", "build"],
        "claimer_kind": "endpoint",
        "attempts_cap": 50,
        "ttl_seconds": 300,
        "ttl_default": 300,
        "scope_human_id": personas.alice.id,
        "summary_truncated": False,
        "retryable": True,
        "retry_base_seconds": 30,
        "retry_max_seconds": 3600,
        "to_state": "input-required",
        "limit": 500,
        "seen_at": "2026-01-01T00:00:00Z",
        "ids": ["td_aaaaaaaaaaaaaaaaaaaa"],
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


def _held_count(node: dict[str, Any]) -> bool:
    """Whether ``node`` is a limited queue's count of its held todos (todos/sql/_queue_limits.sql,
    in every agent's claim): the endpoint's held todos through their own index, never a scan,
    run only for a queue with a limit (docs/decisions/0028-queue-limits.md)."""
    # The statement may splice the count more than once (claim_next_queues: heads and walk);
    # the plan numbers the later aliases (held_1).
    if not re.fullmatch(r"held(_\d+)?", node.get("Alias", "")):
        return False
    assert node["Node Type"] == "Index Scan", node
    assert node["Index Name"] == "todos_board_state_idx", node
    assert "endpoint_id = " in node["Index Cond"], node
    return True


def _reads_todos_by_primary_key(name: str, plan: dict[str, Any]) -> None:
    scans = [node for node in plan_nodes(plan) if node.get("Relation Name") == "todos"]
    reads = [node for node in scans if node["Node Type"] != "ModifyTable"]
    assert reads, f"{name}: no read of todos in {plan}"
    for node in reads:
        if _held_count(node):
            continue
        assert node["Node Type"] == "Index Scan", (name, node)
        assert node["Index Name"] == "todos_pkey", (name, node)


BULK = ("retry", "cancel")


def _statements_reading_attempts() -> list[tuple[str, str]]:
    # The bulk statements are built per filter combination; the unfiltered one stands for all.
    bulk = [(f"bulk_{action}", lifecycle.bulk_statement(action, "TRUE")) for action in BULK]
    found = [(name, sql) for name, sql in bulk if "todo_attempts" in sql]
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


# --- claim_next: the heads of the requested queues, whatever the other queues hold -------------

CLAIM_INDEX = "todos_claim_queue_idx"
HEADS = 8  # rows claim_next_queues reads per queue (todos/sql/claim_next_queues.sql)
# One queue (its fast form first: a queue that sets no limit), several.
CLAIMS = ["CLAIM_NEXT_UNLIMITED", "CLAIM_NEXT", "CLAIM_NEXT_QUEUES"]


def _todo_reads(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        node
        for node in plan_nodes(plan)
        if node.get("Relation Name") == "todos" and node["Node Type"] != "ModifyTable"
    ]


def _unbounded_todo_reads(node: dict[str, Any]) -> bool:
    """Whether ``node`` reads rows of todos that no Limit beneath it bounds."""
    if node.get("Relation Name") == "todos" and node["Node Type"] != "ModifyTable":
        return True
    return any(
        child["Node Type"] != "Limit" and _unbounded_todo_reads(child)
        for child in node.get("Plans", [])
    )


@pytest.mark.django_db
@pytest.mark.parametrize("name", CLAIMS)
def test_claim_next_reads_todos_only_by_queue_head_and_by_key(
    few_leases_in_the_statistics: Personas, name: str
) -> None:
    """The generic plan: each requested queue through the per-queue claim index (endpoint and
    queue both in the index condition, so no other queue's entry is read), a chosen row by its
    key; no sequential scan, no other index, and no sort of more than a bounded number of rows
    per queue."""
    plan = _generic_plan(getattr(lifecycle, name), _values(few_leases_in_the_statistics))

    reads = [node for node in _todo_reads(plan) if not _held_count(node)]
    assert {node["Index Name"] for node in reads if "Index Name" in node} >= {CLAIM_INDEX}
    for node in reads:
        assert node["Node Type"] == "Index Scan", node
        assert node["Index Name"] in (CLAIM_INDEX, "todos_pkey"), node
        if node["Index Name"] == CLAIM_INDEX:
            assert "endpoint_id = " in node["Index Cond"], node
            # The column is a domain (todo_queue), compared as its text.
            assert "(queue)::text = " in node["Index Cond"], node
    for node in plan_nodes(plan):
        if "Sort" in node["Node Type"]:
            assert not _unbounded_todo_reads(node), node


@pytest.fixture
def backlog_on_another_queue(personas: Personas) -> Personas:
    """20,000 pending todos on queue "bulk", older than everything else; a few newer ones on
    "triage" and "build"; nothing on "idle". Then fresh statistics."""
    ep = personas.endpoint_a.id
    with connection.cursor() as cur:
        cur.execute(
            """INSERT INTO todos (id, endpoint_id, queue, title, created_at, updated_at)
               SELECT 'td_' || substr(translate(md5('bulk:' || i), '0189', 'wxyz'), 1, 20),
                      %s, 'bulk', 'bulk ' || i, now() - interval '1 day' + i * interval '1 ms',
                      now()
                 FROM generate_series(1, 20000) AS i""",
            [ep],
        )
    for queue in ("triage", "build", "triage", "build"):
        lifecycle.create(ep, queue=queue, title="newer")
    with connection.cursor() as cur:
        cur.execute("ANALYZE todos")
    return personas


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "queues", "takes"),
    [
        ("CLAIM_NEXT_UNLIMITED", ["triage"], 1),
        ("CLAIM_NEXT_UNLIMITED", ["idle"], 0),
        ("CLAIM_NEXT", ["triage"], 1),
        ("CLAIM_NEXT", ["idle"], 0),
        ("CLAIM_NEXT_QUEUES", ["triage", "build"], 1),
        ("CLAIM_NEXT_QUEUES", ["idle", "spare"], 0),
    ],
)
def test_claim_next_does_not_read_the_backlog_of_queues_it_did_not_ask_for(
    backlog_on_another_queue: Personas, name: str, queues: list[str], takes: int
) -> None:
    # Executed on the generic plan (what a prepared statement runs): the per-endpoint walk this
    # replaced read the 20,000 older "bulk" rows on every one of these calls.
    values = {**_values(backlog_on_another_queue), "queue": queues[0], "queues": queues}
    plan = _generic_plan(getattr(lifecycle, name), values, analyze=True)

    read = 0
    for node in _todo_reads(plan):
        loops = node.get("Actual Loops", 0)
        read += (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * loops
    # At most the heads of each requested queue, then the one row locked by its key.
    assert read <= HEADS * len(queues) + 1, plan
    assert plan["Actual Rows"] == takes


@pytest.mark.django_db
def test_claim_next_settles_on_its_generic_plans(personas: Personas) -> None:
    """PostgreSQL plans a prepared statement's first five executions for their values, then keeps
    the generic plan unless the custom plans looked cheaper. Given the queue array, the planner
    would estimate each plan from its length, every custom plan would look cheaper, and the
    claim would be planned anew on every call (about as long as running it). The statements
    read the array only through sub-selects so that cannot happen."""
    ep = personas.endpoint_a.id
    for queue in ("triage", "build"):
        lifecycle.create(ep, queue=queue, title="one")
    calls = [["triage"], ["idle"], ["triage", "build"], ["idle", "build", "spare"]] * 10
    for queues in calls:
        lifecycle.claim_next(ep, queues, owner=OWNER)

    with connection.cursor() as cur:
        cur.execute(
            "SELECT statement LIKE '%%heads AS%%', generic_plans, custom_plans"
            " FROM pg_prepared_statements WHERE statement LIKE %s",
            ["%prior_stale%"],
        )
        plans = {several: (generic, custom) for several, generic, custom in cur.fetchall()}
    # Each statement ran 20 times: psycopg prepared it after 5, PostgreSQL planned the next 5
    # for their values, then kept the generic plan for the last 10.
    assert plans == {False: (10, 5), True: (10, 5)}, plans


# --- the paused-queue probe: one lookup of the open pauses, whatever the history holds ----------

PAUSE_INDEX = "queue_pauses_open_idx"


@pytest.fixture
def a_long_pause_history(few_leases_in_the_statistics: Personas) -> Personas:
    """Two thousand pauses of the endpoint's queues, every one resumed, and one open pause of
    another queue, analyzed: a probe that read the history would read them all."""
    ep = few_leases_in_the_statistics.endpoint_a.id
    with connection.cursor() as cur:
        cur.execute(
            """INSERT INTO queue_pauses (endpoint_id, queue, paused_by_kind, paused_by,
                                         resumed_at, resumed_by_kind, resumed_by)
               SELECT %s, CASE WHEN i %% 2 = 0 THEN 'triage' ELSE 'build' END, 'system', 'x',
                      now(), 'system', 'x'
                 FROM generate_series(1, 2000) AS i""",
            [ep],
        )
        cur.execute(
            "INSERT INTO queue_pauses (endpoint_id, queue, paused_by_kind, paused_by)"
            " VALUES (%s, 'idle', 'system', 'x')",
            [ep],
        )
        cur.execute("ANALYZE queue_pauses")
    return few_leases_in_the_statistics


@pytest.mark.django_db
# Several queues: once per queue in `heads`, and once more in `walk`, which runs here: the
# fixture's todos share one created_at, so the head locked is not strictly older than the rows
# `heads` left unread (claim_next_queues.sql).
@pytest.mark.parametrize(
    ("name", "probes"),
    [("CLAIM_NEXT_UNLIMITED", 1), ("CLAIM_NEXT", 1), ("CLAIM_NEXT_QUEUES", 2 * 2)],
)
def test_the_claims_paused_queue_probe_is_one_index_lookup_per_queue(
    a_long_pause_history: Personas, name: str, probes: int
) -> None:
    """Executed on the generic plan: each requested queue's pause is looked up in the partial
    index of open pauses, once (the plan runs it ahead of the queue's scan), never by reading
    the queue's resumed pauses; and the claim still takes its todo."""
    plan = _generic_plan(getattr(lifecycle, name), _values(a_long_pause_history), analyze=True)

    reads = [node for node in plan_nodes(plan) if node.get("Relation Name") == "queue_pauses"]
    assert reads, plan
    loops = 0
    for node in reads:
        assert node["Node Type"] in ("Index Scan", "Index Only Scan"), node
        assert node["Index Name"] == PAUSE_INDEX, node
        assert node.get("Rows Removed by Filter", 0) == 0, node
        loops += node["Actual Loops"]
    assert loops <= probes, plan
    assert plan["Actual Rows"] == 1  # the claim took a todo: triage and build are not paused


@pytest.fixture
def scheduled_todos(personas: Personas) -> Personas:
    """Scheduled todos everywhere but where the claim asks: 5,000 of endpoint B on its queue
    "later", due tomorrow; 3,000 of endpoint A on "bulk", due tomorrow; 50 of A on "later", due
    the day after. Then fresh statistics."""
    a, b = personas.endpoint_a.id, personas.endpoint_b.id
    with connection.cursor() as cur:
        for endpoint_id, queue, n, days in (
            (b, "later", 5000, 1),
            (a, "bulk", 3000, 1),
            (a, "later", 50, 2),
        ):
            cur.execute(
                """INSERT INTO todos (id, endpoint_id, queue, title, not_before)
                   SELECT 'td_' || substr(translate(md5(%s || i), '0189', 'wxyz'), 1, 20),
                          %s, %s, 'scheduled ' || i,
                          now() + %s * interval '1 day' + i * interval '1 s'
                     FROM generate_series(1, %s) AS i""",
                [f"{endpoint_id}:{queue}:", endpoint_id, queue, days, n],
            )
        cur.execute("ANALYZE todos")
    return personas


@pytest.mark.django_db
def test_an_empty_claims_earliest_not_before_is_one_probe_of_its_queue(
    scheduled_todos: Personas,
) -> None:
    # On the generic plan (what an agent's idle poll runs, prepared), the earliest not_before
    # of each asked queue is one probe of the endpoint's own entries for that queue
    # (todos_queue_not_before_idx), not a walk of the scheduled todos due sooner on other
    # queues and endpoints through the sweeps' todos_not_before_idx: the planner cannot tell
    # which queue q.queue is, and guessed that a quarter of them matched
    # (todos/sql/_earliest_not_before.sql).
    values = {**_values(scheduled_todos), "queues": ["idle", "later"]}
    plan = _generic_plan(statements.CLAIM_EMPTY, values, analyze=True)

    probes = [n for n in _todo_reads(plan) if n.get("Index Name") == "todos_queue_not_before_idx"]
    assert probes and all(n["Actual Rows"] <= 1 for n in probes), plan
    assert not any(n.get("Index Name") == "todos_not_before_idx" for n in _todo_reads(plan)), plan
