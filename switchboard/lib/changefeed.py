"""The change feed: every committed change announced once, heard by one LISTEN connection per
process, and every consumer hears every change.

Announcing
----------
Every lifecycle statement that changes what a page or a consumer shows returns its
announcements (``todos/sql/_notify*.sql``: one ``todo_changed`` payload per todo it changed) in
its ``notified`` column, and the OTLP store does for the todos it stored spans on
(``otlp/sql/store.sql``). ``switchboard.lib.sql`` hands them to ``announce`` once the
statement's transaction has committed (never for a rollback), and the process's ``Announcer``
sends them with ``pg_notify`` from a connection and a transaction of its own, committed without
waiting for its WAL flush, in batches: at most one transaction per 50 ms, each carrying what
was announced since the last. PostgreSQL then delivers them to every process listening,
whichever process (web, sweeper, a command) made the change. The payload is ids and small facts
only (``Change``); a consumer re-reads what it shows through the owner-scoped reads.

Not in the statement's own transaction, because PostgreSQL holds its notification queue's lock
from before a notifying transaction's commit record until that commit has been flushed: every
notifying commit would wait for the flush of the one before it, and the claim path's commits
would never share a flush (docs/decisions/0033-announce-after-commit.md). The price is that the
announcement is no longer atomic with the change. A send that fails is retried on a new
connection; announcements it had to drop are replaced by one ``resync``, which tells every
consumer of every process to re-read. Only a process that dies between a commit and its send
(milliseconds) loses announcements for good: the doorbell's rings are still owed and the
sweeper's ring scans pay them (docs/decisions/0015-rings-never-lost.md); a page or stream shows
the change on its todo's next change, its next re-read or its reload.

Listening
---------

This module holds the one listener of the process (psycopg's async connection on the server's
event loop, not a Django one: the ORM is sync-only and a LISTEN session must stay open for the
life of the process; direct to the database, not through a transaction pooler:
``switchboard/lib/direct.py``) and hands each change to the consumers that subscribed at start-up
(``subscribe``, from their app's ``ready()``): the MCP doorbell, the Board's live relay, the A2A
waiters, the OTLP refresh. It knows nothing of them: it sits in ``switchboard/lib``.

Consumers are called on the listener's event loop, one after the other: they must not block
(a database read goes to a thread through ``switchboard.lib.dbthread``). A consumer that raises
is logged and the others are still told.

It starts with the first request of a server process (``switchboard/asgi.py``) or at the ASGI
lifespan's start, and waits (bounded) for its first LISTEN, so a socket or stream opened by that
request already hears the next change. A process without consumers (the sweeper) never starts it.

It reconnects with backoff when its connection drops (a database restart, a terminated backend).
Notifications sent while it is away are lost (PostgreSQL queues them only for connected
listeners), so after every reconnect each consumer is told ``RESYNC``: re-read everything it
shows. The events are level triggers, and one spare read is cheaper than a change nobody hears.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg

from switchboard.lib import direct

logger = logging.getLogger(__name__)

CHANNEL = "todo_changed"
# The kinds a statement announces (todos/sql/_notify*.sql, otlp/sql/store.sql), and the one the
# listener sends itself after a reconnect.
READY = "ready"  # the todo became claimable: the doorbell tries the gate
RUNG = "rung"  # a ring was recorded: every process pushes it to its own streams
CHANGED = "changed"  # anything else a page shows
SPANS = "spans"  # spans were stored for the todo (every batch)
SPANS_DUE = "spans_due"  # not from the database: a todo's spans are due a redraw, at most once
#   per todo per second (otlp/refresh.py turns SPANS into these)
RESYNC = "resync"  # "re-read everything you show": the listener's own after a reconnect, or an
#   announcer's that had to drop announcements (ANNOUNCE_MAX_PENDING)
# How long a notification may wait before the listener checks that its connection still works
# (a silently dropped TCP connection otherwise waits forever).
HEALTH_CHECK_SECONDS = 30.0
# How long the first request waits for the first LISTEN before serving anyway; the listener
# keeps trying in the background if the database is slow or down.
READY_TIMEOUT_SECONDS = 5.0
BACKOFF_FIRST_SECONDS = 0.2
BACKOFF_MAX_SECONDS = 5.0
APPLICATION_NAME = "switchboard-changefeed"
ANNOUNCER_APPLICATION_NAME = "switchboard-announcer"
# Announcements a process holds while its announcer cannot send (the database is down): beyond
# this the oldest are dropped and one RESYNC is announced in their place once it can send.
ANNOUNCE_MAX_PENDING = 10_000
# The announcements of one transaction: PostgreSQL folds identical payloads within one anyway.
ANNOUNCE_BATCH_MAX = 1_000
# The least time between two of a process's notify-only transactions: a batch cost the
# announcer's thread about three times its statement's CPU (measured, not taken apart), so under
# load one carries every announcement of the last 50 ms, while after a quiet spell the first goes
# at once. An announcement waits at most this long for its turn (the live update's budget is
# 500 ms at p95). docs/decisions/0033-announce-after-commit.md, "The interval", has the figures
# for 50 ms against 20.
ANNOUNCE_INTERVAL_SECONDS = 0.05
# How long a process's exit (and ``Announcer.flush``'s default) waits for announcements still
# on their way.
ANNOUNCE_FLUSH_SECONDS = 2.0
# The announcer's statement: every payload of a batch in one transaction, which commits without
# waiting for the WAL flush (set for the session when it connects, _announcer_connect), so the
# notification queue's lock is held for the commit record's write, not its flush. The payloads
# go as a binary array (%b): as text, psycopg escapes every JSON payload's quotes with a regular
# expression, about 12 µs of the process's Python a payload (1.6 µs in binary, timed).
_ANNOUNCE_SQL = f"SELECT pg_notify('{CHANNEL}', p) FROM unnest(%b::text[]) AS p"
_RESYNC_PAYLOAD = json.dumps({"kind": RESYNC})


@dataclass(frozen=True, slots=True)
class Change:
    """One committed change: which todo, whose, on which queue, in which state, and what kind.

    ``todo_id`` is empty for a queue-wide ring (a queue's resume) and for ``RESYNC``;
    ``endpoint_id`` is None only for ``RESYNC``. ``reason`` is a ring's reason (``RUNG``).
    """

    kind: str
    todo_id: str = ""
    endpoint_id: UUID | None = None
    queue: str = ""
    state: str = ""
    reason: str = ""

    @classmethod
    def parse(cls, payload: str) -> Change:
        """The change a notification's payload names; raises ``ValueError`` for a malformed one."""
        try:
            data = json.loads(payload)
            if data["kind"] == RESYNC:
                return RESYNC_CHANGE
            return cls(
                kind=str(data["kind"]),
                todo_id=str(data.get("todo_id") or ""),
                endpoint_id=UUID(str(data["endpoint_id"])),
                queue=str(data.get("queue") or ""),
                state=str(data.get("state") or ""),
                reason=str(data.get("reason") or ""),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(payload[:200]) from exc


RESYNC_CHANGE = Change(kind=RESYNC)

type Consumer = Callable[[Change], None]


def connection_kwargs(application_name: str = APPLICATION_NAME) -> dict[str, Any]:
    """libpq parameters for the listener's (or the announcer's) session: a session of its own,
    direct to the database when Django's connections go through a transaction pooler
    (``switchboard/lib/direct.py``)."""
    return direct.params(application_name)


class Feed:
    """The process's LISTEN connection and the consumers it tells."""

    def __init__(self) -> None:
        self._consumers: list[Consumer] = []
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self.connections = 0  # LISTEN sessions opened so far (1 + reconnects)
        self.backend_pid: int | None = None  # the listening session's, in pg_stat_activity
        self._conn: psycopg.AsyncConnection[Any] | None = None

    def subscribe(self, consumer: Consumer) -> None:
        """Tell ``consumer`` of every change from now on (once, however often called)."""
        if consumer not in self._consumers:
            self._consumers.append(consumer)

    def unsubscribe(self, consumer: Consumer) -> None:
        """Stop telling ``consumer``; one never subscribed is ignored."""
        if consumer in self._consumers:
            self._consumers.remove(consumer)

    @property
    def running(self) -> bool:
        """Whether the listener runs on the current event loop."""
        task = self._task
        if task is None or task.done():
            return False
        try:
            return task.get_loop() is asyncio.get_running_loop()
        except RuntimeError:
            return False

    async def start(self) -> None:
        """Start the listener on the running loop if it does not run there; wait (bounded) for
        its first LISTEN."""
        if not self.running:
            self._ready = asyncio.Event()
            # An empty context: the task outlives the request that started it. A task left on
            # another loop (a closed one: each test's asyncio.run) died with it.
            self._task = asyncio.get_running_loop().create_task(
                self._run(self._ready), name="changefeed", context=contextvars.Context()
            )
        assert self._ready is not None
        try:
            await asyncio.wait_for(self._ready.wait(), READY_TIMEOUT_SECONDS)
        except TimeoutError:
            logger.warning("change feed: not listening yet; continuing to try in the background")

    async def stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task
        self._task = None

    def close(self) -> None:
        """Stop listening now, from any thread, whether or not the listener's loop still runs
        (the end of a test session, before its database is dropped: a loop closed with the task
        pending leaves the session open)."""
        task, conn = self._task, self._conn
        self._task = self._conn = None
        loop = task.get_loop() if task is not None and not task.done() else None
        if loop is not None and loop.is_running():
            with suppress(RuntimeError):
                loop.call_soon_threadsafe(task.cancel)  # type: ignore[union-attr]
        elif conn is not None and not conn.closed:
            conn.pgconn.finish()

    def tell(self, change: Change) -> None:
        """Hand ``change`` to every consumer; one that raises is logged, the others still told."""
        for consumer in tuple(self._consumers):
            try:
                consumer(change)
            except Exception:
                logger.exception("change feed: a consumer failed on %s", change)

    def handle(self, payload: str) -> None:
        """One notification's payload, parsed and told; a malformed one is logged and dropped."""
        try:
            change = Change.parse(payload)
        except ValueError:
            logger.warning("change feed: ignoring malformed payload %r", payload[:200])
            return
        self.tell(change)

    async def _run(self, ready: asyncio.Event) -> None:
        delay = BACKOFF_FIRST_SECONDS
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    autocommit=True, **connection_kwargs()
                ) as conn:
                    self._conn = conn
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self.backend_pid = conn.info.backend_pid
                    self.connections += 1
                    if self.connections > 1:
                        logger.info("change feed: listening again; consumers re-read")
                        self.tell(RESYNC_CHANGE)
                    ready.set()
                    delay = BACKOFF_FIRST_SECONDS
                    await self._listen(conn)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # psycopg.Error, OSError: the connection is gone
                logger.warning("change feed: listener lost (%s); reconnecting in %.1fs", exc, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX_SECONDS)

    async def _listen(self, conn: psycopg.AsyncConnection[Any]) -> None:
        while True:
            received = False
            async for notify in conn.notifies(timeout=HEALTH_CHECK_SECONDS):
                received = True
                self.handle(notify.payload)
            if not received:
                await conn.execute("SELECT 1")  # raises if the connection died quietly


FEED = Feed()


def _announcer_connect() -> psycopg.Connection[Any]:
    conn = psycopg.connect(autocommit=True, **connection_kwargs(ANNOUNCER_APPLICATION_NAME))
    # A notify-only transaction changes no data: losing it in a crash loses announcements,
    # which the consumers' re-reads cover, never a change (docs/decisions/0010 keeps the
    # lifecycle's own commits synchronous).
    conn.execute("SET synchronous_commit = off")
    return conn


class Announcer:
    """The process's sender of announcements: one thread, one connection, made on first use.

    ``announce`` only queues (the caller's thread never waits on the database); the thread sends
    what is queued in one notify-only transaction, then whatever was queued meanwhile. In order:
    a process's announcements reach every listener in the order they were made.
    """

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]] = _announcer_connect):
        self._connect = connect
        self._cond = threading.Condition()
        self._pending: list[str] = []
        self._lost = False  # announcements were dropped: a RESYNC is owed
        self._queued = 0  # announcements queued so far, and sent (or dropped) so far
        self._done = 0
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._closing = False
        self._idle = False  # the thread waits for a first announcement (announce wakes it)
        self._conn: psycopg.Connection[Any] | None = None
        self.sent = 0  # notify-only transactions committed (batches), for tests and benchmarks
        self._sent_at = 0.0  # when the last one was (time.monotonic)

    def announce(self, payloads: Iterable[str]) -> None:
        """Queue ``payloads`` (``todo_changed`` JSON texts) for the announcer's thread."""
        with self._cond:
            if self._pid != os.getpid():
                self._forked()
            before = len(self._pending)
            self._pending.extend(payloads)
            added = len(self._pending) - before
            if not added:
                return
            self._queued += added
            if len(self._pending) > ANNOUNCE_MAX_PENDING:
                dropped = len(self._pending) - ANNOUNCE_MAX_PENDING
                del self._pending[:dropped]
                self._done += dropped
                self._lost = True
            if self._thread is None or not self._thread.is_alive():
                self._closing = False
                self._thread = threading.Thread(
                    target=self._run, name="changefeed-announcer", daemon=True
                )
                self._thread.start()
            elif self._idle:
                self._cond.notify_all()  # (a flush may wait on the condition too)

    @property
    def backend_pid(self) -> int | None:
        """The announcing session's, while connected (benchmarks count its CPU)."""
        conn = self._conn
        return None if conn is None or conn.closed else int(conn.info.backend_pid)

    def flush(self, timeout: float = ANNOUNCE_FLUSH_SECONDS) -> bool:
        """Wait up to ``timeout`` seconds for everything queued so far to be sent; whether it
        was (tests and benchmarks: a barrier between a commit and what it announced)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            target = self._queued
            while self._done < target:
                left = deadline - time.monotonic()
                if left <= 0 or self._thread is None or not self._thread.is_alive():
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout: float = ANNOUNCE_FLUSH_SECONDS) -> None:
        """Send what is queued (waiting at most ``timeout``), then stop the thread and close the
        connection; a later ``announce`` starts them again."""
        self.flush(timeout)
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        with self._cond:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _forked(self) -> None:
        # A forked child has the parent's queue but not its thread or its connection's use.
        self._pid = os.getpid()
        self._pending.clear()
        self._queued = self._done = 0
        self._thread = None
        self._conn = None

    def _take(self) -> tuple[list[str], bool] | None:
        with self._cond:
            while not self._pending and not self._lost:
                if self._closing:
                    return None
                self._idle = True
                try:
                    self._cond.wait()
                finally:
                    self._idle = False
            if self._closing:
                if not self._pending:
                    return None  # a RESYNC still owed goes with the process
            elif (wait := self._sent_at + ANNOUNCE_INTERVAL_SECONDS - time.monotonic()) > 0:
                # The last batch went a moment ago: let the others of this moment join the next
                # (close() cuts it short).
                self._cond.wait(wait)
            batch = self._pending[:ANNOUNCE_BATCH_MAX]
            del self._pending[:ANNOUNCE_BATCH_MAX]
            lost, self._lost = self._lost, False
            return batch, lost

    def _run(self) -> None:
        while (taken := self._take()) is not None:
            batch, lost = taken
            # Identical payloads would fold in the transaction anyway.
            payloads = list(dict.fromkeys([_RESYNC_PAYLOAD, *batch] if lost else batch))
            sent = self._send(payloads)
            with self._cond:
                self._done += len(batch)
                if not sent:
                    self._lost = True
                self._cond.notify_all()

    def _send(self, payloads: list[str]) -> bool:
        """Send one batch, on a new connection after a failure, until it goes; False only when
        the announcer closes first (the batch is lost, and a RESYNC owed)."""
        delay = BACKOFF_FIRST_SECONDS
        while True:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = self._connect()
                self._conn.execute(_ANNOUNCE_SQL, [payloads])
                self._sent_at = time.monotonic()
                self.sent += 1
                return True
            except Exception as exc:  # psycopg.Error, OSError: the connection is gone
                logger.warning(
                    "change feed: %d announcements not sent (%s); retrying in %.1fs",
                    len(payloads),
                    exc,
                    delay,
                )
                if self._conn is not None:
                    with suppress(Exception):
                        self._conn.close()
                    self._conn = None
            with self._cond:
                if self._closing:
                    return False
                self._cond.wait(delay)  # close() wakes it
                if self._lost and payloads[0] != _RESYNC_PAYLOAD:
                    # Announcements dropped while this batch waited: the resync goes with it,
                    # ahead of everything still queued.
                    self._lost = False
                    payloads = [_RESYNC_PAYLOAD, *payloads]
            delay = min(delay * 2, BACKOFF_MAX_SECONDS)


ANNOUNCER = Announcer()


def announce(payloads: Iterable[str]) -> None:
    """Announce ``payloads`` (committed changes) on the change feed, from this process's
    announcer."""
    ANNOUNCER.announce(payloads)


atexit.register(ANNOUNCER.close)
