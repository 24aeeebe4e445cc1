"""Each server process's count of open subscription streams, written where the Board can sum it.

The doorbell's registry (``mcp_server.doorbell``) knows the streams this process serves; the
Board, served by any process, needs every process's. So the process reports its counts per
endpoint to ``mcp_streams_open`` (migrations/0002_streams_open.py): a stream opening or closing
wakes the reporter, which writes the whole of this process's counts in one statement, and while
any stream stays open it rewrites them every ``STREAMS_HEARTBEAT_SECONDS`` so they stay fresh.
The Board counts only rows fresher than ``STREAMS_STALE_SECONDS`` (``todos.fleet``): a process
killed without saying goodbye drops out of the count by itself, and the next report of any
process deletes its rows.

Writes are cheap by construction: nothing per request or per ring; one statement per burst of
opens and closes (a burst that arrives while one is being written is folded into the next) and
one per heartbeat while streams are open. A process that has never had a stream writes nothing.
A failed write is logged and retried at the next wake: the count is informational, and the
streams themselves never wait on it (docs/decisions/0018-fleet-counts.md).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid
from collections.abc import Callable, Mapping
from contextlib import suppress
from uuid import UUID

from django.db import DatabaseError
from django.db import connection as django_connection

from switchboard.lib import dbthread
from todos.fleet import STREAMS_HEARTBEAT_SECONDS, STREAMS_STALE_SECONDS

logger = logging.getLogger(__name__)

# Rows not refreshed for this long are a dead process's, and any report deletes them.
PRUNE_SECONDS = 2 * STREAMS_STALE_SECONDS

# One statement: this process's endpoints that have no stream left, and dead processes' rows, go;
# the current counts are upserted. Never touches another live process's rows.
_REPORT = """
WITH gone AS (
    DELETE FROM mcp_streams_open
     WHERE (process_id = %(process_id)s AND NOT endpoint_id = ANY(%(endpoint_ids)s))
        OR (process_id <> %(process_id)s
            AND seen_at < now() - %(prune_seconds)s * interval '1 second')
)
INSERT INTO mcp_streams_open (endpoint_id, process_id, streams)
SELECT u.endpoint_id, %(process_id)s, u.streams
  FROM unnest(%(endpoint_ids)s::uuid[], %(streams)s::int[]) AS u(endpoint_id, streams)
ON CONFLICT (endpoint_id, process_id)
DO UPDATE SET streams = EXCLUDED.streams, seen_at = now()
"""


def report(process_id: UUID, counts: Mapping[UUID, int]) -> None:
    """Make ``process_id``'s rows say ``counts`` (endpoint → open streams, each above zero)."""
    endpoint_ids = list(counts)
    with django_connection.cursor() as cursor:
        cursor.execute(
            _REPORT,
            {
                "process_id": process_id,
                "endpoint_ids": endpoint_ids,
                "streams": [counts[e] for e in endpoint_ids],
                "prune_seconds": PRUNE_SECONDS,
            },
        )


_report = dbthread.wrap(report)


class Reporter:
    """Writes this process's stream counts when they change, and refreshes them while any."""

    def __init__(self, counts: Callable[[], dict[UUID, int]]) -> None:
        self._counts = counts
        self._changed: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._reported: dict[UUID, int] = {}
        # Names this process's rows. Minted when reporting starts (on the first MCP request),
        # not at import: workers forked from one parent after import must not share it, and a
        # restarted server never inherits (or refreshes) the rows of the one it replaced.
        self.process_id: UUID | None = None

    def changed(self) -> None:
        """A stream opened or closed here (called by the doorbell's registry; never blocks)."""
        if self._changed is not None:
            self._changed.set()

    def start(self) -> None:
        if self.process_id is None:
            self.process_id = uuid.uuid4()
        if self._task is None or self._task.done():
            # Made on the loop that waits on it; set at once, so streams opened before the
            # reporter started are counted.
            self._changed = asyncio.Event()
            self._changed.set()
            # An empty context: the task outlives the request that started it.
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="mcp-presence", context=contextvars.Context()
            )

    async def stop(self) -> None:
        """Stop reporting and delete this process's rows (best effort: they go stale anyway)."""
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task
        self._task = None
        if self._reported and self.process_id is not None:
            try:
                await _report(self.process_id, {})
            except DatabaseError:
                logger.warning("presence: could not delete this process's stream counts")
            self._reported = {}

    async def _run(self) -> None:
        assert self._changed is not None and self.process_id is not None
        while True:
            with suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), STREAMS_HEARTBEAT_SECONDS)
            self._changed.clear()
            counts = self._counts()
            if not counts and not self._reported:
                continue  # nothing open, nothing written: stay silent
            try:
                await _report(self.process_id, counts)
            except Exception:  # DatabaseError, or anything else: the loop must outlive it
                logger.warning("presence: could not write the stream counts", exc_info=True)
                continue
            self._reported = counts
