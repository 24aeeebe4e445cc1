"""switchboard/lib/dbthread.py: one worker-thread hop, the connection probed only after idling.

Each test runs its calls on a pool of one thread (``one_hop_thread``), so every call meets the
same worker connection, as a busy server's threads do.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from asgiref.sync import async_to_sync
from django.db import DatabaseError, connection
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
    on one loop (the test's ``one_hop_thread`` runs them on one worker thread). Two markers run
    between calls instead: ``KILL`` terminates the worker's backend (the last pid a step
    returned) from a connection of its own, as a server restart or a pooler would; ``IDLE``
    moves the clock on by ``IDLE_PROBE_SECONDS``."""

    async def main() -> list[Any]:
        outcomes: list[Any] = []
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
    clock: Clock, probes: list[int], one_hop_thread: dbthread.Pool
) -> None:
    first, hot, idle = run_steps(clock, backend_pid, backend_pid, IDLE, backend_pid)
    assert first == hot == idle  # one connection throughout
    # A new connection counts as checked; the hot call skipped the probe; the idle one had it.
    assert len(probes) == 1


def test_a_dead_connection_fails_one_hot_call_and_is_replaced_before_an_idle_one(
    clock: Clock, probes: list[int], one_hop_thread: dbthread.Pool
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
    clock: Clock, one_hop_thread: dbthread.Pool
) -> None:
    """As channels' consumers run under async_to_sync: the caller's own thread (and so its
    connection), with the same boundary around the call."""

    async def hop() -> int:
        return await dbthread.run(backend_pid, thread_sensitive=True)

    assert async_to_sync(hop)() == backend_pid()
    assert run_steps(clock, backend_pid) != [backend_pid()]  # a worker thread's own connection


def test_the_thread_that_went_idle_last_takes_the_next_call(
    hop_pool: Callable[[int], dbthread.Pool],
) -> None:
    """Two calls at once start both threads; calls one at a time after them all meet one thread
    (and so one warm connection), not each thread in turn."""
    hop_pool(2)
    both = threading.Barrier(2, timeout=5)

    def meet() -> int:
        both.wait()
        return threading.get_ident()

    async def main() -> tuple[set[int], list[int]]:
        together = await asyncio.gather(dbthread.run(meet), dbthread.run(meet))
        alone = [await dbthread.run(threading.get_ident) for _ in range(6)]
        return set(together), alone

    together, alone = asyncio.run(main())
    assert len(together) == 2
    assert len(set(alone)) == 1 and alone[0] in together


def test_calls_past_the_threads_wait_their_turn_and_all_run(
    hop_pool: Callable[[int], dbthread.Pool],
) -> None:
    hop_pool(2)
    running = 0
    most = 0
    lock = threading.Lock()

    def step(n: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02)
        with lock:
            running -= 1
        return n * n

    async def main() -> list[int]:
        return await asyncio.gather(*(dbthread.run(step, n) for n in range(8)))

    squares = asyncio.run(main())
    assert squares == [n * n for n in range(8)]
    assert most == 2


def test_a_call_whose_caller_gave_up_before_it_started_is_not_run(
    one_hop_thread: dbthread.Pool,
) -> None:
    release = threading.Event()
    ran: list[str] = []

    async def main() -> None:
        busy = asyncio.ensure_future(dbthread.run(release.wait, 5))
        await asyncio.sleep(0.05)  # the one thread is in it
        queued = asyncio.ensure_future(dbthread.run(ran.append, "queued"))
        await asyncio.sleep(0.05)
        queued.cancel()
        release.set()
        assert await busy is True
        await dbthread.run(ran.append, "after")
        with pytest.raises(asyncio.CancelledError):
            await queued

    asyncio.run(main())
    assert ran == ["after"]


def test_a_call_runs_in_its_callers_context_and_hands_back_its_exception(
    one_hop_thread: dbthread.Pool,
) -> None:
    label: contextvars.ContextVar[str] = contextvars.ContextVar("label", default="none")

    def fails() -> None:
        raise LookupError(label.get())

    async def main() -> tuple[str, str]:
        label.set("caller's")
        seen = await dbthread.run(label.get)
        with pytest.raises(LookupError) as raised:
            await dbthread.run(fails)
        return seen, str(raised.value)

    assert asyncio.run(main()) == ("caller's", "caller's")


def test_a_call_outliving_its_loop_leaves_the_thread_serving(
    one_hop_thread: dbthread.Pool,
) -> None:
    """The loop that asked is closed before the answer: nothing waits for it, and the thread
    takes the next loop's call."""
    release = threading.Event()

    async def leave() -> None:
        waiting = asyncio.ensure_future(dbthread.run(release.wait, 5))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # asyncio.run cancels it as the loop closes

    asyncio.run(leave())
    release.set()
    # A thread killed by the closed loop would leave this call waiting: a timeout, not a hang.
    assert asyncio.run(asyncio.wait_for(dbthread.run(lambda: 42), 5)) == 42
    assert len(one_hop_thread._workers) == 1


def test_shutdown_closes_the_threads_connections_and_ends_them(
    hop_pool: Callable[[int], dbthread.Pool],
) -> None:
    pool = hop_pool(2)
    both = threading.Barrier(2, timeout=5)

    def pid_together() -> int:
        both.wait()
        return backend_pid()

    async def main() -> set[int]:
        return set(await asyncio.gather(dbthread.run(pid_together), dbthread.run(pid_together)))

    pids = asyncio.run(main())
    pool.shutdown()
    assert len(pids) == 2
    assert not any(worker.is_alive() for worker in pool._workers)
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", [list(pids)])
        assert cur.fetchone() == (0,)
    with pytest.raises(RuntimeError, match="shut down"):
        asyncio.run(dbthread.run(int))  # a pool shut down takes no more calls


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
