"""switchboard/lib/dbthread.py: one worker-thread hop, the connection probed only after idling.

Each test runs its calls on a loop whose default executor has one thread, so every call meets
the same worker connection, as a busy server's threads do.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest
from asgiref.sync import async_to_sync
from django.db import DatabaseError, connection, connections
from django.db.backends.postgresql.base import DatabaseWrapper

from switchboard.lib import dbthread

pytestmark = pytest.mark.django_db(transaction=True)  # the worker has its own connection


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(dbthread, "_clock", clock)
    return clock


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per CONN_HEALTH_CHECKS probe (``is_usable``) on any connection."""
    seen: list[int] = []
    is_usable = DatabaseWrapper.is_usable

    def counted(self: DatabaseWrapper) -> bool:
        seen.append(1)
        return bool(is_usable(self))

    monkeypatch.setattr(DatabaseWrapper, "is_usable", counted)
    return seen


def backend_pid() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        row = cur.fetchone()
    assert row is not None
    return int(row[0])


def run_steps(clock: Clock, *steps: Callable[[], Any]) -> list[Any]:
    """Each step's ``dbthread.run`` outcome in order (a DatabaseError it raised, or its value),
    on one loop with one worker thread whose connection is closed at the end. Two markers run
    between calls instead: ``KILL`` terminates the worker's backend (the last pid a step
    returned) from a connection of its own, as a server restart or a pooler would; ``IDLE``
    moves the clock on by ``IDLE_PROBE_SECONDS``."""

    async def main() -> list[Any]:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
        outcomes: list[Any] = []
        try:
            for step in steps:
                if step is KILL:
                    _terminate(next(o for o in reversed(outcomes) if isinstance(o, int)))
                    continue
                if step is IDLE:
                    clock.now += dbthread.IDLE_PROBE_SECONDS
                    continue
                try:
                    outcomes.append(await dbthread.run(step))
                except DatabaseError as exc:
                    outcomes.append(exc)
        finally:
            await loop.run_in_executor(None, connections.close_all)
        return outcomes

    return asyncio.run(main())


def KILL() -> None:
    raise AssertionError("a marker: run_steps does not run it in the worker")


def IDLE() -> None:
    raise AssertionError("a marker: run_steps does not run it in the worker")


def _terminate(pid: int) -> None:
    db = connection.settings_dict
    with psycopg.connect(
        dbname=db["NAME"],
        user=db["USER"] or None,
        password=db["PASSWORD"] or None,
        host=db["HOST"] or None,
        port=db["PORT"] or None,
        autocommit=True,
    ) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])


def test_a_connection_used_a_moment_ago_is_not_probed_and_an_idle_one_is(
    clock: Clock, probes: list[int]
) -> None:
    first, hot, idle = run_steps(clock, backend_pid, backend_pid, IDLE, backend_pid)
    assert first == hot == idle  # one connection throughout
    # A new connection counts as checked; the hot call skipped the probe; the idle one had it.
    assert len(probes) == 1


def test_a_dead_connection_fails_one_hot_call_and_is_replaced_before_an_idle_one(
    clock: Clock, probes: list[int]
) -> None:
    """The price of the skipped probe: killed between two calls a moment apart, the second
    call fails (a DatabaseError: a tool answers ``internal``) and the boundary after it drops
    the connection, so the next call reconnects. Killed before a call after an idle second,
    the probe finds it dead and replaces it, and the call succeeds."""
    first, hot, second, idle = run_steps(
        clock, backend_pid, KILL, backend_pid, backend_pid, KILL, IDLE, backend_pid
    )
    assert isinstance(first, int)
    assert isinstance(hot, DatabaseError), hot
    assert isinstance(second, int) and second != first  # a new backend after the failure
    assert isinstance(idle, int) and idle != second  # probed, found dead, replaced


def test_wrap_hops_each_call_to_a_worker_thread_with_its_arguments() -> None:
    def where(a: int, *, b: int) -> tuple[int, int, int, str]:
        return threading.get_ident(), a, b, connection.alias

    hop = dbthread.wrap(where)
    assert hop.__name__ == "where"
    thread, a, b, alias = asyncio.run(hop(1, b=2))
    assert (a, b, alias) == (1, 2, "default")
    assert thread != threading.get_ident()


def test_a_thread_sensitive_hop_runs_in_the_thread_of_the_sync_code_around_it(
    clock: Clock,
) -> None:
    """As channels' consumers run under async_to_sync: the caller's own thread (and so its
    connection), with the same boundary around the call."""

    async def hop() -> int:
        return await dbthread.run(backend_pid, thread_sensitive=True)

    assert async_to_sync(hop)() == backend_pid()
    assert run_steps(clock, backend_pid) != [backend_pid()]  # a worker thread's own connection


PRODUCT = ("switchboard", "todos", "attempts", "activity", "otlp", "mcp_server", "a2a_server")
# Every way async code could reach the database other than this module.
OTHER_HOPS = re.compile(
    r"database_sync_to_async|(?<!async_to_)sync_to_async\(|run_in_executor|asyncio\.to_thread"
)


def test_no_module_but_dbthread_hops_to_the_database() -> None:
    root = Path(__file__).resolve().parents[2]
    found = [
        f"{path.relative_to(root)}:{n}: {line.strip()}"
        for package in PRODUCT
        for path in sorted((root / package).rglob("*.py"))
        if path != root / "switchboard/lib/dbthread.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if OTHER_HOPS.search(line) and not line.lstrip().startswith("#")
    ]
    assert found == []
    # The scan finds what it is looking for.
    assert OTHER_HOPS.search("x = database_sync_to_async(f, thread_sensitive=False)")
    assert OTHER_HOPS.search("await sync_to_async(f)()") and not OTHER_HOPS.search(
        "async_to_sync(f)"
    )
