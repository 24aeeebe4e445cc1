"""The race harness: actors in threads, each on its own Django connection, and raw connections.

A race test that touches the database commits for real (``pytest.mark.django_db(
transaction=True)``): a row another connection must see, or a lock another connection must
wait on, cannot live in the test's rolled-back transaction.

``at_once`` releases a few identical actors together; ``Crew`` runs actors of different kinds
for as long as a test needs; ``behind_this_transaction`` parks one behind a row lock the test
holds, to make a gap between a statement's snapshot and the row it locks deterministic.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from django.db import connection
from psycopg.conninfo import make_conninfo

from switchboard.lib.sql import fetch_one


def raw_connection(*, autocommit: bool = False) -> psycopg.Connection[Any]:
    """A psycopg connection of its own to the test database (not Django's)."""
    s = connection.settings_dict
    conninfo = make_conninfo(
        dbname=s["NAME"],
        host=s["HOST"] or None,
        port=str(s["PORT"]) if s["PORT"] else None,
        user=s["USER"] or None,
        password=s["PASSWORD"] or None,
    )
    return psycopg.connect(conninfo, autocommit=autocommit)


class Crew:
    """Threads that report what went wrong instead of dying silently.

    Each thread runs on its own Django connection and closes it when it ends.
    """

    def __init__(self) -> None:
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def problem(self, message: str) -> None:
        with self._lock:
            self.problems.append(message)

    def start(self, name: str, target: Callable[[], None]) -> None:
        def run() -> None:
            try:
                target()
            except BaseException as exc:
                self.problem(f"{name} died: {exc!r}")
            finally:
                connection.close()

        thread = threading.Thread(target=run, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                self.problem(f"{thread.name} did not stop within {timeout} s")


def at_once[T](n: int, call: Callable[[], T], *, timeout: float = 30.0) -> list[T]:
    """Run ``call`` in ``n`` threads released together by one barrier; return what each returned.

    A thread that raised, or did not end within ``timeout`` seconds, fails the test.
    """
    barrier = threading.Barrier(n, timeout=timeout)
    results: list[T] = []
    lock = threading.Lock()
    crew = Crew()

    def actor() -> None:
        barrier.wait()
        result = call()
        with lock:
            results.append(result)

    for i in range(n):
        crew.start(f"actor {i}", actor)
    crew.join(timeout)
    assert not crew.problems, crew.problems
    return results


def backend_waits_on_a_lock(pid: int, timeout: float = 10.0) -> bool:
    """Whether backend ``pid`` is (or, within ``timeout``, comes to be) blocked on a lock."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = backend_activity(pid)
        if row is not None and row["wait_event_type"] == "Lock":
            return True
        time.sleep(0.01)
    return False


def backend_activity(pid: int) -> dict[str, Any] | None:
    """Backend ``pid``'s row of pg_stat_activity as it is now.

    Within a transaction PostgreSQL serves the statistics views from a snapshot taken at their
    first read; clearing it makes each poll see the present.
    """
    return fetch_one(
        "SELECT pg_stat_clear_snapshot(), state, query, wait_event_type,"
        " backend_xid IS NOT NULL AS writing FROM pg_stat_activity WHERE pid = %(pid)s",
        {"pid": pid},
    )


def backend_pid() -> int:
    row = fetch_one("SELECT pg_backend_pid() AS pid", {})
    assert row is not None
    return int(row["pid"])


def behind_this_transaction(crew: Crew, name: str, call: Callable[[], object]) -> list[object]:
    """Run ``call`` in a thread; return once it waits on a lock this transaction holds.

    The returned list receives the call's result (or exception) when the thread ends.
    """
    pid: queue.SimpleQueue[int] = queue.SimpleQueue()
    out: list[object] = []

    def run() -> None:
        pid.put(backend_pid())
        try:
            out.append(call())
        except Exception as exc:
            out.append(exc)

    crew.start(name, run)
    assert backend_waits_on_a_lock(pid.get(timeout=10)), f"{name} never waited on the lock"
    return out
