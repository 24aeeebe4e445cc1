"""Waiting for a todo to change: what a blocking ``SendMessage`` and the streams wait on.

``heard`` listens to the lifecycle's after-commit announcements (``todos/events.py``, the same
events the Board's live pages hear). A waiter registers the todo it follows with the event loop
it runs on; ``heard`` runs on the thread that committed and wakes the waiters of that todo on
their own loops. A change committed by another process (the sweeper's reap, a second web
process) is not announced here, so a waiter also re-reads its todo every ``POLL_SECONDS``:
in-process changes arrive at once, the others within that bound.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from uuid import UUID

POLL_SECONDS = 2.0

_lock = threading.Lock()
_waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}


def heard(todo_id: str, endpoint_id: UUID, state: str) -> None:
    """The ``todos.events`` listener: wake whoever waits on ``todo_id``."""
    with _lock:
        waiting = tuple(_waiters.get(todo_id, ()))
    for loop, event in waiting:
        with suppress(RuntimeError):  # the loop closed; its waiter is gone with it
            loop.call_soon_threadsafe(event.set)


@contextmanager
def following(todo_id: str) -> Iterator[asyncio.Event]:
    """An event set whenever ``todo_id`` changes in this process, while the block runs."""
    entry = (asyncio.get_running_loop(), asyncio.Event())
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


async def changed(event: asyncio.Event, timeout: float = POLL_SECONDS) -> None:
    """Wait until ``event`` is set or ``timeout`` passes; clear it for the next wait."""
    with suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), timeout)
    event.clear()
