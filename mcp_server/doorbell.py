"""The doorbell: ``ready`` and ``rung`` changes pushed to subscribed MCP clients, and every
change of a todo to the clients subscribed to that todo's resource (``switchboard://todos/{id}``).

Every transition that makes a todo claimable announces a ``ready`` change, made by its own
statement (``todos/sql/_notify.sql``) and sent once it has committed, so it reaches every
process whichever process (web, sweeper, admin) made the change. The doorbell is a consumer of the
process's one change feed (``switchboard/lib/changefeed.py``: one LISTEN connection, shared with
the Board's live relay, the A2A waiters and the OTLP refresh) and fans each change out to its own
open subscription streams:

- modern ``subscriptions/listen`` streams (``mcp_server.server.subscriptions_listen``): the
  queue URIs are fixed by the listen request, so matching is in memory;
- legacy GET streams (``mcp_server.transport``), keyed by the signed session id: their
  subscriptions live in ``mcp_subscriptions`` because ``resources/subscribe`` may be answered by
  another process, so a ring for an endpoint with legacy streams looks them up there.

Owner scope: streams are registered per endpoint and a notification only reaches streams of
the endpoint that owns the todo.

The registry's counts of open streams per endpoint are what the Board's endpoint pages show as
subscriptions; ``mcp_server.presence`` writes them where every process's can be summed.

The gate: at most one ring per todo per ``ring_gate_seconds`` (a minute by default), shared by
every process, because it lives in the todo's row: a process that has streams for the endpoint
rings through ``lifecycle.ring`` (``todos/sql/ring.sql``), which takes the gate, writes the
`rung` row and announces a ``rung`` change at commit; every process then pushes that ring to its own
streams. Of N processes ringing one todo, one statement wins, so subscribers hear it once, not N
times. A ring the gate refuses is owed, not dropped: the sweeper rings it when the gate opens
(``lifecycle.ring_due``), and that ring reaches the streams the same way. A due retry's requeue
clears the gate in the row, so its ring goes out even inside the minute.

The feed reconnects with backoff when its connection drops (a database restart, a terminated
backend). Notifications sent while it is away are lost (PostgreSQL queues them only for
connected listeners), so on its ``RESYNC`` every open stream is rung once for each queue it
watches: the events are level triggers ("read the queue again"), and one spare read is cheaper
than a todo nobody hears about.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from django.db import DatabaseError, transaction
from django.db import connection as django_connection

from mcp_server import presence, resources
from switchboard.lib import changefeed, dbthread
from switchboard.lib.actors import Actor
from switchboard.lib.changefeed import Change
from todos import lifecycle

logger = logging.getLogger(__name__)

# How long a ring waits for the gate's statement before going out from this process anyway (a
# slow or failing database must not silence the doorbell).
RECORD_TIMEOUT_SECONDS = 1.0
SUBSCRIPTION_RETENTION = "7 days"
# Legacy subscriptions are rows a client creates at will (one per queue URI, and any queue name
# is a URI): a cap per session keeps one client from filling mcp_subscriptions and making every
# ring's lookup slow. Far above the queues one agent watches.
MAX_SUBSCRIPTIONS_PER_SESSION = 100
_SUBSCRIBE_LOCK = 0x5B5B  # the first key of the per-session advisory lock (arbitrary, stable)


# --- streams -----------------------------------------------------------------------------------


@dataclass(eq=False)
class Stream:
    """One open subscription stream in this process: what it watches and what is pending.

    Pending URIs are a set, not a queue: an update means "read it again", so two rings for one
    queue before the client reads are one message, and a stream's backlog is bounded by the
    number of queues it watches however slowly its client reads.
    """

    endpoint_id: UUID
    # Modern: the honored resourceSubscriptions. Legacy: None (looked up in mcp_subscriptions).
    uris: frozenset[str] | None = None
    session_id: str | None = None
    closed: bool = False
    _pending: dict[str, None] = field(default_factory=dict)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)

    def push(self, uri: str) -> None:
        self._pending[uri] = None
        self._wake.set()

    def close(self) -> None:
        self.closed = True
        self._wake.set()

    async def wait(self, timeout: float | None = None) -> list[str]:
        """The URIs rung since the last call; empty on timeout or when closed."""
        if not self._pending and not self.closed:
            with suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
        self._wake.clear()
        uris, self._pending = list(self._pending), {}
        return uris

    async def __aiter__(self) -> AsyncIterator[str]:
        while not self.closed:
            for uri in await self.wait():
                yield uri


# --- legacy subscriptions (the database table, any process) ------------------------------------


class TooManySubscriptions(Exception):
    """The session already holds ``MAX_SUBSCRIPTIONS_PER_SESSION`` other subscriptions."""


def subscribe(session_id: str, endpoint_id: UUID, uri: str) -> None:
    """Store (or refresh) the session's subscription to ``uri``; raise ``TooManySubscriptions``
    when that would make more than ``MAX_SUBSCRIPTIONS_PER_SESSION`` for the session."""
    with transaction.atomic(), django_connection.cursor() as cursor:
        # Sessions never end server-side; forget those not seen for a week (before counting, so
        # a session's stale rows do not count against it).
        cursor.execute(
            "DELETE FROM mcp_subscriptions WHERE seen_at < now() - %s::interval",
            [SUBSCRIPTION_RETENTION],
        )
        # Two subscribes of one session racing past the count would overshoot the cap. The
        # two-key form is a keyspace apart from the sweeps' one-key locks (todos/sweeps.py).
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [_SUBSCRIBE_LOCK, session_id]
        )
        cursor.execute(
            "INSERT INTO mcp_subscriptions (session_id, uri, endpoint_id)"
            " SELECT %s, %s, %s WHERE (SELECT count(*) FROM mcp_subscriptions"
            "  WHERE session_id = %s AND uri <> %s) < %s"
            " ON CONFLICT (session_id, uri) DO UPDATE SET seen_at = now()",
            [session_id, uri, endpoint_id, session_id, uri, MAX_SUBSCRIPTIONS_PER_SESSION],
        )
        if cursor.rowcount == 0:
            raise TooManySubscriptions(
                f"a session may hold at most {MAX_SUBSCRIPTIONS_PER_SESSION} subscriptions;"
                " unsubscribe from one first"
            )


def unsubscribe(session_id: str, uri: str) -> None:
    with django_connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM mcp_subscriptions WHERE session_id = %s AND uri = %s", [session_id, uri]
        )


def touch(session_id: str) -> None:
    """Mark a session's subscriptions as in use (its GET stream opened)."""
    with django_connection.cursor() as cursor:
        cursor.execute(
            "UPDATE mcp_subscriptions SET seen_at = now() WHERE session_id = %s", [session_id]
        )


def subscribed(endpoint_id: UUID, session_ids: list[str], uri: str | None) -> list[tuple[str, str]]:
    """(session, uri) pairs among ``session_ids`` subscribed to ``uri`` (any URI when None)."""
    with django_connection.cursor() as cursor:
        cursor.execute(
            "SELECT session_id, uri FROM mcp_subscriptions"
            " WHERE endpoint_id = %s AND session_id = ANY(%s) AND (%s::text IS NULL OR uri = %s)",
            [endpoint_id, session_ids, uri, uri],
        )
        return [(row[0], row[1]) for row in cursor.fetchall()]


_subscribed = dbthread.wrap(subscribed)
_ring = dbthread.wrap(lifecycle.ring)


# --- the doorbell ------------------------------------------------------------------------------


class Doorbell:
    """The registry of this process's open streams, and the change feed's consumer that rings
    them (``heard``)."""

    def __init__(self) -> None:
        self._streams: dict[UUID, set[Stream]] = {}
        self._pending_rings: set[asyncio.Task[None]] = set()
        # Reports this registry's counts for the Board's fleet view (mcp_server/presence.py).
        self.presence = presence.Reporter(self.counts)

    # registry

    @contextmanager
    def open(
        self,
        endpoint_id: UUID,
        *,
        uris: frozenset[str] | None = None,
        session_id: str | None = None,
    ) -> Iterator[Stream]:
        stream = Stream(endpoint_id, uris=uris, session_id=session_id)
        self._streams.setdefault(endpoint_id, set()).add(stream)
        self.presence.changed()
        try:
            yield stream
        finally:
            stream.close()
            streams = self._streams.get(endpoint_id)
            if streams is not None:
                streams.discard(stream)
                if not streams:
                    del self._streams[endpoint_id]
            self.presence.changed()

    def counts(self) -> dict[UUID, int]:
        """Open streams in this process, per endpoint."""
        return {endpoint_id: len(streams) for endpoint_id, streams in self._streams.items()}

    # lifecycle

    async def start(self) -> None:
        """Start reporting presence and the change feed (if it does not run yet); waiting for
        the feed's first LISTEN means a client that subscribes on the very first request
        already hears the next ring."""
        self.presence.start()
        await changefeed.FEED.start()

    async def stop(self) -> None:
        # The feed stays: other consumers of this process hear it too.
        await self.presence.stop()

    # fan-out

    def heard(self, change: Change) -> None:
        """The change feed's consumer: ``ready`` tries the shared gate, ``rung`` rings,
        ``RESYNC`` rings every open stream once; other changes are not the doorbell's."""
        if change.kind == changefeed.RESYNC:
            self._ring_everything()
            return
        if (
            change.kind in (changefeed.READY, changefeed.CHANGED)
            and change.todo_id is not None
            and change.endpoint_id is not None
            and change.endpoint_id in self._streams
        ):
            # A todo's own resource: rung on every change of it, to the streams watching it
            # (a holder hears its todo canceled or timed out at once). No gate: a todo changes
            # a handful of times, and each change is news to whoever watches it.
            self._ring(change.endpoint_id, resources.todo_uri(change.todo_id))
        if change.kind not in (changefeed.READY, changefeed.RUNG):
            return
        endpoint_id = change.endpoint_id
        if endpoint_id is None or endpoint_id not in self._streams:
            # Nobody here listens for this endpoint: nothing to ring, and the gate is left to a
            # process that has someone to ring (or to the sweeper, for a push URL).
            return
        uri = resources.queue_uri(change.queue)
        if change.kind == changefeed.RUNG:
            self._ring(endpoint_id, uri)
        else:
            self._spawn(self._gate_then_ring(endpoint_id, uri, change.todo_id))

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._pending_rings.add(task)
        task.add_done_callback(self._pending_rings.discard)

    async def _gate_then_ring(self, endpoint_id: UUID, uri: str, todo_id: str) -> None:
        """Find the streams here that hear ``uri``; if any, ring the todo through the gate.

        The ring itself reaches the streams through a ``rung`` change after the gate's statement
        commits (so a claim the ring prompts never meets that write), in every process. A gate
        that refuses is the end of it here. Only when the statement fails or is slow is this
        process's ring pushed directly: a database in trouble must not silence the doorbell.
        """
        streams = self._streams.get(endpoint_id, ())
        targets = [s for s in streams if s.uris is not None and uri in s.uris]
        legacy = [s for s in streams if s.uris is None]
        if legacy:
            targets += [
                stream for _, stream in await self._legacy_targets(endpoint_id, legacy, uri)
            ]
        if not targets:
            return
        try:
            await asyncio.wait_for(
                _ring(todo_id, reason="ready", ringer=Actor.doorbell(), subscribers=len(targets)),
                RECORD_TIMEOUT_SECONDS,
            )
        except (DatabaseError, TimeoutError):
            logger.info("doorbell: the gate for %s did not answer; ringing here anyway", todo_id)
            for stream in targets:
                stream.push(uri)

    def _ring(self, endpoint_id: UUID, uri: str | None) -> None:
        """Push ``uri`` (every watched URI when None) to the endpoint's streams."""
        legacy: list[Stream] = []
        for stream in self._streams.get(endpoint_id, ()):
            if stream.uris is None:
                legacy.append(stream)
            elif uri is None:
                for watched in stream.uris:
                    stream.push(watched)
            elif uri in stream.uris:
                stream.push(uri)
        if legacy:
            # A database look-up: off the listener's loop iteration, so one slow query does not
            # hold up the next notification.
            self._spawn(self._ring_legacy(endpoint_id, legacy, uri))

    async def _legacy_targets(
        self, endpoint_id: UUID, streams: list[Stream], uri: str | None
    ) -> list[tuple[str, Stream]]:
        """The legacy streams subscribed to ``uri`` (every URI when None), with the URI each
        subscribed to; their subscriptions live in the database (see the module docstring)."""
        by_session: dict[str, list[Stream]] = {}
        for stream in streams:
            if stream.session_id is not None:
                by_session.setdefault(stream.session_id, []).append(stream)
        try:
            pairs = await _subscribed(endpoint_id, list(by_session), uri)
        except DatabaseError:
            logger.warning("doorbell: could not read legacy subscriptions", exc_info=True)
            return []
        return [
            (subscribed_uri, stream)
            for session_id, subscribed_uri in pairs
            for stream in by_session.get(session_id, ())
        ]

    async def _ring_legacy(self, endpoint_id: UUID, streams: list[Stream], uri: str | None) -> None:
        for subscribed_uri, stream in await self._legacy_targets(endpoint_id, streams, uri):
            stream.push(subscribed_uri)

    def _ring_everything(self) -> None:
        for endpoint_id in list(self._streams):
            self._ring(endpoint_id, None)


DOORBELL = Doorbell()
