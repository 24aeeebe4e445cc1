"""The web surface and the sweeper behind PgBouncer in transaction mode
(docs/guides/operations.md, "Behind a connection pooler"; docs/decisions/0041).

A pgbouncer of the test's own (``bench/pgbouncer.py``: transaction pooling, round robin over its
server sessions) stands in front of the test database. A daphne server and the sweeper run with
``DATABASE_URL`` through it and ``DATABASE_DIRECT_URL`` straight to the database, as a managed
PostgreSQL with a pooler is run: agents over MCP, their spans over OTLP, the Board. Skipped,
saying why, only when pgbouncer is not installed.
"""

from __future__ import annotations

import asyncio
import html
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import psycopg
import pytest
from django.db import connection

from attempts.models import TodoAttempt
from bench.pgbouncer import PgBouncer, installed
from otlp.models import TodoSpan, TodoSpanCount
from tests.base import Personas
from tests.live import LiveServer, _database_url, mcp_client, run, start_servers, stop_servers
from tests.otlp.helpers import SpanSpec, claimed_with_trace, post_proto, request, trace_id
from tests.reach import expire_lease
from todos import lifecycle, sweeps

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
MODE = "2026-07-28"
QUEUE = "pooled"
PASSWORD = "correct horse battery staple"  # the personas' (tests/factories.py)
CYCLES = 8
# Calls enough for each of the server's database threads (a handful) to run claim_next more
# often than psycopg's prepare threshold (5): a prepared statement would then be sent to a
# server session that never saw it.
POLLS = 80
# OTLP batches for one todo, sent four at a time: more than the pooler's server sessions, so
# batches of the same todo meet on different ones and wait on each other's advisory lock.
BATCHES = 8
SPANS_PER_BATCH = 3


@pytest.fixture(scope="module")
def pooler(django_db_setup: None) -> Iterator[PgBouncer]:
    if installed() is None:
        pytest.skip("pgbouncer is not installed (Debian: apt-get install pgbouncer)")
    db = connection.settings_dict
    bouncer = PgBouncer(
        host=db["HOST"] or "127.0.0.1",
        port=int(db["PORT"] or 5432),
        user=db["USER"] or "postgres",
        pool_size=4,
    )
    bouncer.start()
    # Two server sessions from the start, so that round robin has somewhere to go.
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(_hold_a_server_session, [bouncer.url(db["NAME"])] * 2))
    try:
        yield bouncer
    finally:
        bouncer.stop()


def _hold_a_server_session(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_sleep(0.3)")


@pytest.fixture(scope="module")
def pooled_env(daphne_env: dict[str, str], pooler: PgBouncer) -> dict[str, str]:
    """The live servers' environment, with the pooler in front and the direct way beside it."""
    return {
        **daphne_env,
        "DATABASE_URL": pooler.url(connection.settings_dict["NAME"]),
        "DATABASE_DIRECT_URL": _database_url(),
    }


@pytest.fixture(scope="module")
def pooled(
    pooled_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    [server] = start_servers(pooled_env, tmp_path_factory.mktemp("pooled"), 1)
    try:
        yield server
    finally:
        stop_servers([server])


async def drain(server: LiveServer, key: str, cycles: int) -> list[str]:
    """Claim, heartbeat and complete ``cycles`` todos over MCP; the tool errors met."""
    errors = []
    async with mcp_client(server.mcp_url("agent-a"), key, MODE) as agent:
        for _ in range(cycles):
            claimed = await agent.call_tool("claim_next", {"queue": QUEUE})
            if claimed.is_error or claimed.structured_content is None:
                errors.append(f"claim_next: {claimed.content}")
                continue
            todo_id = claimed.structured_content["todo"]["id"]
            for tool, arguments in (
                ("heartbeat", {"id": todo_id, "note": "through the pooler"}),
                ("complete", {"id": todo_id, "summary": "done"}),
            ):
                result = await agent.call_tool(tool, arguments)
                if result.is_error:
                    errors.append(f"{tool}: {result.content}")
    return errors


async def polls(server: LiveServer, key: str, times: int) -> list[str]:
    """``claim_next`` on an empty queue ``times`` times; the tool errors met."""
    errors = []
    async with mcp_client(server.mcp_url("agent-a"), key, MODE) as agent:
        for _ in range(times):
            result = await agent.call_tool("claim_next", {"queue": "nothing-here"})
            if result.is_error:
                errors.append(str(result.content))
    return errors


async def log_in(http: httpx2.AsyncClient, server: LiveServer) -> None:
    form = await http.get(server.url("/login/"))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert token is not None
    done = await http.post(
        server.url("/login/"),
        data={"username": "alice", "password": PASSWORD, "csrfmiddlewaretoken": token[1]},
        headers={"Referer": server.url("/login/")},
    )
    assert done.status_code == 302, done.text


def test_agents_and_the_board_work_through_the_pooler(
    pooled: LiveServer, pooled_env: dict[str, str], personas: Personas
) -> None:
    ids = [
        lifecycle.create(personas.endpoint_a.id, queue=QUEUE, title=f"pooled {n}").id
        for n in range(CYCLES)
    ]

    assert run(drain(pooled, personas.key_a, CYCLES)) == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT state, count(*) FROM todos WHERE id = ANY(%s) GROUP BY 1", [ids])
        assert cursor.fetchall() == [("completed", CYCLES)]
    assert run(polls(pooled, personas.key_a, POLLS)) == []

    # An agent's spans: otlp/store.py prepares nothing here and leaves the plan cache alone
    # (`_kept_plans()` false, otlp/sql/lock.sql), serialises one todo's batches by a
    # transaction-level advisory lock, which a transaction pooler keeps, and turns off the
    # commit's flush wait for its own transaction only. A span two batches carry is stored once.
    claim = claimed_with_trace(personas.endpoint_a.id, trace := trace_id(), queue="traced")
    shared = SpanSpec(trace, name="in two batches")
    batches = [
        request(
            [SpanSpec(trace, name=f"batch {n} span {i}") for i in range(SPANS_PER_BATCH)]
            + ([shared] if n < 2 else [])
        )
        for n in range(BATCHES)
    ]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda batch: post_proto(pooled, personas.key_a, batch), batches))
    assert [a.partial_success.rejected_spans for a in answers] == [0] * BATCHES
    stored = BATCHES * SPANS_PER_BATCH + 1
    assert TodoSpan.objects.filter(todo_id=claim.todo.id).count() == stored
    counts = TodoSpanCount.objects.filter(todo_id=claim.todo.id)
    assert [(c.attempt_seq, c.spans) for c in counts] == [(1, stored)]
    assert TodoAttempt.objects.get(todo_id=claim.todo.id, seq=1).spans_stored == stored
    # Nothing a batch set stayed on the server sessions the pooler lends to the next client.
    for _ in range(4):
        with psycopg.connect(pooled_env["DATABASE_URL"], autocommit=True) as conn:
            row = conn.execute(
                "SELECT current_setting('synchronous_commit'), current_setting('plan_cache_mode')"
            ).fetchone()
            assert row == ("on", "auto")


def test_a_server_that_prepares_statements_through_the_pooler_fails(
    pooled_env: dict[str, str], personas: Personas, tmp_path: Path
) -> None:
    """The control for the test above: the same polls from a server that prepares its
    statements (DATABASE_PREPARE_THRESHOLD=5, the setting without a pooler) meet a server
    session that never saw them, so the pooled default (nothing prepared) is what makes them
    work."""
    [server] = start_servers(pooled_env, tmp_path, 1, DATABASE_PREPARE_THRESHOLD="5")
    try:
        errors = run(polls(server, personas.key_a, POLLS))
    finally:
        stop_servers([server])
    assert errors and all('"internal"' in error for error in errors), errors[:3]
    assert "does not exist" in server.log_tail(500_000)


def test_a_change_made_through_the_pooler_reaches_a_board_socket(
    pooled: LiveServer, personas: Personas
) -> None:
    """The change feed listens on its direct session: the server hears the commits of its own
    pooled connections and pushes them to an open page."""
    from websockets.asyncio.client import connect

    todo = lifecycle.create(personas.endpoint_a.id, queue=QUEUE, title="watched")

    async def scenario() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            await log_in(http, pooled)
            page = await http.get(pooled.url(f"/todos/{todo.id}"))
            found = re.search(r'ws-connect="([^"]*)"', page.text)
            assert found is not None, page.text[:500]
            cookies = "; ".join(f"{k}={v}" for k, v in http.cookies.items())
            async with connect(
                f"ws://127.0.0.1:{pooled.port}{html.unescape(found[1])}",
                origin=pooled.base,
                additional_headers={"Cookie": cookies},
            ) as ws:
                await asyncio.wait_for(ws.recv(), 5)  # the container, on connect
                async with mcp_client(pooled.mcp_url("agent-a"), personas.key_a, MODE) as agent:
                    claimed = await agent.call_tool("claim", {"id": todo.id})
                    assert not claimed.is_error, claimed.content
                pushed = await asyncio.wait_for(ws.recv(), 5)
                assert f'id="sb-trail-state-{todo.id}"' in str(pushed)
                assert "claimed" in str(pushed)

    run(scenario())


def _pass_locks_held() -> list[int]:
    """The sweepers' pass locks (todos/sweeps.py's and alerts/sweep.py's keys, 0x5B_00xx and
    0x5B_01xx) that some session holds now."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (classid::bigint << 32) | objid::bigint FROM pg_locks"
            " WHERE locktype = 'advisory' AND granted AND objsubid = 1"
            " AND ((classid::bigint << 32) | objid::bigint) BETWEEN %s AND %s",
            [0x5B_0000, 0x5B_01FF],
        )
        return sorted(int(row[0]) for row in cursor.fetchall())


def test_the_sweeper_through_the_pooler_takes_its_pass_locks_on_a_direct_session(
    pooled_env: dict[str, str], personas: Personas
) -> None:
    """Taken through the pooler, a pass lock would stay on a pooled server session after the
    sweeper exits (its unlock ran on another), and every later pass of every sweeper would skip
    that sweep. Taken on the direct session, it goes with the pass; and a lock another session
    holds still makes the pass skip."""
    lapsed = []
    for n in range(2):
        todo = lifecycle.create(personas.endpoint_a.id, queue=QUEUE, title=f"lapsed {n}")
        lifecycle.claim(personas.endpoint_a.id, todo.id, owner="endpoint:gone")
        expire_lease(todo.id)
        lapsed.append(todo.id)

    def sweep() -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", "sweeper", "--once"],
            cwd=ROOT,
            env=pooled_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [sweeps.LOCK_REAP])
    try:
        assert "reap: requeued" not in sweep()  # another session holds the pass's lock
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [sweeps.LOCK_REAP])
    assert "reap: requeued 2" in sweep()
    sweep()
    # Every pass's locks went with their passes: none stayed behind on a pooled session.
    assert _pass_locks_held() == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT state FROM todos WHERE id = ANY(%s)", [lapsed])
        assert {row[0] for row in cursor.fetchall()} == {"pending"}
