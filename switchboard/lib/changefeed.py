"""The change feed: one LISTEN connection per process, and every consumer hears every change.

Every lifecycle statement that changes what a page or a consumer shows calls
``pg_notify('todo_changed', …)`` in the statement itself (``todos/sql/_notify_*.sql``), and the
OTLP store does for the todos it stored spans on (``otlp/sql/store.sql``). PostgreSQL delivers a
notification at commit, never for a rollback, to every process listening, whichever process
(web, sweeper, a command) made the change. The payload is ids and small facts only
(``Change``); a consumer re-reads what it shows through the owner-scoped reads.

This module holds the one listener of the process (psycopg's async connection on the server's
event loop, not a Django one: the ORM is sync-only and a LISTEN session must stay open for the
life of the process) and hands each change to the consumers that subscribed at start-up
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
import contextvars
import json
import logging
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg
from django.db import connection as django_connection

logger = logging.getLogger(__name__)

CHANNEL = "todo_changed"
# The kinds a statement sends (todos/sql/_notify_*.sql, otlp/sql/store.sql), and the one the
# listener sends itself after a reconnect.
READY = "ready"  # the todo became claimable: the doorbell tries the gate
RUNG = "rung"  # a ring was recorded: every process pushes it to its own streams
CHANGED = "changed"  # anything else a page shows
SPANS = "spans"  # spans were stored for the todo (every batch)
SPANS_DUE = "spans_due"  # not from the database: a todo's spans are due a redraw, at most once
#   per todo per second (otlp/refresh.py turns SPANS into these)
RESYNC = "resync"  # not from the database: "re-read everything you show"
# How long a notification may wait before the listener checks that its connection still works
# (a silently dropped TCP connection otherwise waits forever).
HEALTH_CHECK_SECONDS = 30.0
# How long the first request waits for the first LISTEN before serving anyway; the listener
# keeps trying in the background if the database is slow or down.
READY_TIMEOUT_SECONDS = 5.0
BACKOFF_FIRST_SECONDS = 0.2
BACKOFF_MAX_SECONDS = 5.0
APPLICATION_NAME = "switchboard-changefeed"

# OPTIONS keys Django's PostgreSQL backend consumes itself; the rest are libpq parameters.
_DJANGO_ONLY_OPTIONS = frozenset(
    {"pool", "server_side_binding", "isolation_level", "assume_role", "cursor_factory"}
)


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
    """libpq parameters for a LISTEN connection, from Django's own database settings.

    HOST may be a socket directory (the embedded server's); libpq takes a path as host as is.
    """
    db = django_connection.settings_dict
    options = {k: v for k, v in (db.get("OPTIONS") or {}).items() if k not in _DJANGO_ONLY_OPTIONS}
    kwargs: dict[str, Any] = {
        **options,
        "dbname": db.get("NAME"),
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "host": db.get("HOST") or None,
        "port": str(db["PORT"]) if db.get("PORT") else None,
        # Named, so operators (and the tests) can find it in pg_stat_activity.
        "application_name": application_name,
        "connect_timeout": 5,
    }
    if kwargs["host"] and not str(kwargs["host"]).startswith("/"):
        # TCP: notice a peer that vanished without a FIN within about a minute.
        kwargs.update(keepalives=1, keepalives_idle=30, keepalives_interval=10, keepalives_count=3)
    return {k: v for k, v in kwargs.items() if v is not None}


class Feed:
    """The process's LISTEN connection and the consumers it tells."""

    def __init__(self) -> None:
        self._consumers: list[Consumer] = []
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self.connections = 0  # LISTEN sessions opened so far (1 + reconnects)
        self.backend_pid: int | None = None  # the listening session's, in pg_stat_activity

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
