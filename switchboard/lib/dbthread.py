"""Database work from async code: one hop to a worker thread, a request boundary around it.

The ORM and the lifecycle are sync, so an ASGI surface (MCP, OTLP) runs its database work in a
worker thread of the event loop's default executor. ``run(func, *args)`` is that hop, doing what
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

docs/decisions/0014-bearer-cache.md has the figures.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
import time
from collections.abc import Callable
from typing import Any

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


async def run[T](func: Callable[..., T], /, *args: Any) -> T:
    """``func(*args)`` in a worker thread, inside a request boundary; its result or exception."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    return await loop.run_in_executor(None, context.run, functools.partial(_call, func, args))
