"""Waiting for a todo to change: what A2A's blocking ``SendMessage`` and streams, and MCP
Tasks' ``tasks/result`` and ``notifications/tasks``, wait on.

``heard`` is a consumer of the process's change feed (``switchboard/lib/changefeed.py``): every
committed change to a todo, whichever process made it (a second web process, the sweeper's
reap), is announced once the statement that made it has committed, and heard here
milliseconds later. A waiter registers the todo it follows with the event loop it runs on;
``heard`` wakes the waiters of that todo on their own loops. No poll: after the feed reconnects
(notifications sent while it was away are lost) it tells ``RESYNC``, and every waiter re-reads
once.

A waiter's event starts set: its first wait returns at once, so a change committed between the
caller's first read and the registration is read, never missed. Every wait is bounded by
``REREAD_SECONDS``: a change is announced after its commit, from another transaction, so a
process that dies between the two loses the announcement
(docs/decisions/0033-announce-after-commit.md), and a waiter then re-reads within that bound.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress

from switchboard.lib import changefeed
from switchboard.lib.changefeed import Change

# The longest a waiter waits without re-reading: what a lost announcement can delay it by.
REREAD_SECONDS = 30.0
# Changes that leave a task as it was: spans are telemetry, not the task's state.
_IGNORED = frozenset({changefeed.SPANS, changefeed.SPANS_DUE})

_lock = threading.Lock()
_waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}


def heard(change: Change) -> None:
    """The change feed's consumer: wake whoever waits on the changed todo (everyone on
    ``RESYNC``)."""
    if change.kind in _IGNORED:
        return
    with _lock:
        if change.kind == changefeed.RESYNC:
            waiting = tuple(entry for entries in _waiters.values() for entry in entries)
        else:
            waiting = tuple(_waiters.get(change.todo_id, ()))
    for loop, event in waiting:
        with suppress(RuntimeError):  # the loop closed; its waiter is gone with it
            loop.call_soon_threadsafe(event.set)


@contextmanager
def following(todo_id: str) -> Iterator[asyncio.Event]:
    """An event set whenever ``todo_id`` changes, while the block runs (set at the start)."""
    entry = (asyncio.get_running_loop(), asyncio.Event())
    entry[1].set()
    with _lock:
        _waiters.setdefault(todo_id, set()).add(entry)
    try:
        yield entry[1]
    finally:
        with _lock:
            waiting = _waiters.get(todo_id)
            if waiting is not None:
                waiting.discard(entry)
                if not waiting:
                    del _waiters[todo_id]


async def changed(event: asyncio.Event, timeout: float | None = None) -> None:
    """Wait until ``event`` is set, or ``timeout`` passes (when given; ``REREAD_SECONDS`` at
    most, so the caller re-reads even if an announcement was lost); clear it for the next
    wait."""
    bound = REREAD_SECONDS if timeout is None else min(timeout, REREAD_SECONDS)
    with suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), bound)
    event.clear()


@contextmanager
def following_all(todo_ids: Iterable[str]) -> Iterator[asyncio.Event]:
    """One event set whenever any of ``todo_ids`` changes, while the block runs (set at the
    start): a stream that follows several todos waits on one event."""
    entry = (asyncio.get_running_loop(), asyncio.Event())
    entry[1].set()
    ids = tuple(dict.fromkeys(todo_ids))
    with _lock:
        for todo_id in ids:
            _waiters.setdefault(todo_id, set()).add(entry)
    try:
        yield entry[1]
    finally:
        with _lock:
            for todo_id in ids:
                waiting = _waiters.get(todo_id)
                if waiting is not None:
                    waiting.discard(entry)
                    if not waiting:
                        del _waiters[todo_id]
