"""Database work from async code: one hop to a worker thread, a request boundary around it.

The ORM and the lifecycle are sync, so async code (MCP, A2A, OTLP, the live pages' consumer, the
doorbell) runs its database work in a worker thread, and always through this module: ``run(func,
*args)`` for one call, ``wrap(func)`` for a function called often. Nothing else in the product
hops to the database (no channels ``database_sync_to_async``, no bare ``sync_to_async`` or
thread pool), so every hop gets the same boundary. ``run`` is that hop, doing what
channels' ``database_sync_to_async`` does (Django's request boundary, ``close_old_connections``,
before and after: a connection past ``CONN_MAX_AGE``, left in a transaction or broken by an error
is closed) with two differences that matter on a hot path:

- **The connection is probed only when it has been idle.** ``CONN_HEALTH_CHECKS`` makes the
  first query after each boundary send a ``SELECT 1``: a round trip per tool call, as many as the
  statement itself. A connection this thread used successfully less than ``IDLE_PROBE_SECONDS``
  ago is not probed; one idle longer is, as before. What the probe is for, a connection that died
  while idle (a server restart, an idle timeout at a pooler or firewall), is still caught; a
  server that goes away within that second fails the one call that meets it, which answers the
  ``internal`` error, and the boundary after it closes the connection, so the next call
  reconnects (``tests/switchboard/test_dbthread.py``).
- **No asgiref wrapper.** ``loop.run_in_executor`` with the caller's context copied, as
  ``sync_to_async(thread_sensitive=False)`` does, without its per-call machinery: about half the
  CPU per hop.

``thread_sensitive=True`` runs the call in asgiref's one thread for sync code (the thread of an
enclosing ``async_to_sync``, else its single shared executor) with the same boundary: for a
caller that must see the same connection as the sync code around it, as channels' consumers do
under test. Everything else leaves it off, as the executor's threads are many.

docs/decisions/0014-bearer-cache.md has the figures.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections

# A connection used this recently skips the CONN_HEALTH_CHECKS probe.
IDLE_PROBE_SECONDS = 1.0

# The clock of the idle rule (tests move it).
_clock = time.monotonic


class _Seen(threading.local):
    """When this thread last finished a call on each connection alias that was still open."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}


_seen = _Seen()


def _before() -> None:
    now = _clock()
    for conn in connections.all(initialized_only=True):
        conn.close_if_unusable_or_obsolete()  # arms the probe (health_check_done = False)
        seen = _seen.at.get(conn.alias)
        if conn.connection is not None and seen is not None and now - seen < IDLE_PROBE_SECONDS:
            # Used a moment ago: no SELECT 1 first (Django 4.1+; not in the stubs).
            conn.health_check_done = True  # type: ignore[attr-defined]


def _after() -> None:
    now = _clock()
    for conn in connections.all(initialized_only=True):
        conn.close_if_unusable_or_obsolete()
        if conn.connection is not None and not conn.errors_occurred:
            _seen.at[conn.alias] = now
        else:
            _seen.at.pop(conn.alias, None)


def _call[T](func: Callable[..., T], args: tuple[Any, ...]) -> T:
    _before()
    try:
        return func(*args)
    finally:
        _after()


async def run[T](func: Callable[..., T], /, *args: Any, thread_sensitive: bool = False) -> T:
    """``func(*args)`` in a worker thread, inside a request boundary; its result or exception.

    ``thread_sensitive``: in asgiref's one thread for sync code rather than any executor thread.
    """
    if thread_sensitive:
        return await sync_to_async(_call, thread_sensitive=True)(func, args)
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    return await loop.run_in_executor(None, context.run, functools.partial(_call, func, args))


def wrap[**P, T](
    func: Callable[P, T], *, thread_sensitive: bool = False
) -> Callable[P, Awaitable[T]]:
    """``func`` as a coroutine function whose every call is one ``run`` (keywords allowed)."""

    async def hop(*args: P.args, **kwargs: P.kwargs) -> T:
        call = functools.partial(func, **kwargs) if kwargs else func
        return await run(call, *args, thread_sensitive=thread_sensitive)

    return functools.wraps(func)(hop)
