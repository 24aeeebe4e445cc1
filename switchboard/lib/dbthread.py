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
- **No asgiref wrapper, no executor.** The call runs in the caller's context copied, as
  ``sync_to_async(thread_sensitive=False)`` does, on this module's own threads (``Pool``): the
  caller's loop gets a future, the worker settles it with ``call_soon_threadsafe``. A
  ``ThreadPoolExecutor`` costs about twice that per hop (its locks and idle semaphore, a
  ``concurrent.futures.Future`` chained to the loop's); on the MCP wire this pool took 2.7 %
  off the server's CPU a cycle (docs/decisions/0047-dbthread-pool.md). The pool has as many
  threads as asyncio's default executor would (``THREADS``), started as calls need them; the
  thread that went idle last takes the next call, so a quiet server keeps using one warm
  connection. A call whose caller was cancelled before it started is not run. ``shutdown``
  closes the threads' connections and stops them (the process's exit does not wait for them).

``thread_sensitive=True`` runs the call in asgiref's one thread for sync code (the thread of an
enclosing ``async_to_sync``, else its single shared executor) with the same boundary: for a
caller that must see the same connection as the sync code around it, as channels' consumers do
under test. Everything else leaves it off, as the pool's threads are many.

docs/decisions/0014-bearer-cache.md has the figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections

# A connection used this recently skips the CONN_HEALTH_CHECKS probe.
IDLE_PROBE_SECONDS = 1.0
# The pool's threads at most: asyncio's default executor's count.
THREADS = min(32, (os.cpu_count() or 1) + 4)
# How long ``shutdown`` waits for a thread to finish the call it is running.
SHUTDOWN_SECONDS = 5.0

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


type _Job = tuple[
    asyncio.AbstractEventLoop, asyncio.Future[Any], contextvars.Context, Callable[..., Any], tuple
]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class Pool:
    """Worker threads for ``run``: each call a job handed to the thread that went idle last
    (a new one while fewer than ``threads`` exist and none is idle; else queued), its outcome
    handed back to the caller's loop."""

    def __init__(self, threads: int = THREADS) -> None:
        self.threads = threads
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[_Job | None]] = []  # the last idle at the end
        self._waiting: deque[_Job] = deque()
        self._workers: list[threading.Thread] = []
        self._closed = False

    def submit(self, job: _Job) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("the database hop pool is shut down")
            if self._idle:
                inbox = self._idle.pop()
            elif len(self._workers) < self.threads:
                inbox = queue.SimpleQueue()
                worker = threading.Thread(
                    target=self._work,
                    args=(inbox,),
                    name=f"dbthread_{len(self._workers)}",
                    daemon=True,
                )
                self._workers.append(worker)
                worker.start()
            else:
                self._waiting.append(job)
                return
        inbox.put(job)

    def _next(self, inbox: queue.SimpleQueue[_Job | None]) -> tuple[_Job | None, bool]:
        """After a call, before its caller hears of it: a queued job to run next, or none (the
        pool is closed), or none and True once this thread is back among the idle, to wait on
        its inbox (so a caller answering the result with its next call finds this thread, and
        its connection, first)."""
        with self._lock:
            if self._waiting:
                return self._waiting.popleft(), False
            if self._closed:
                return None, False
            self._idle.append(inbox)
        return None, True

    def _work(self, inbox: queue.SimpleQueue[_Job | None]) -> None:
        job = inbox.get()
        try:
            while job is not None:
                answer = _handle(job)
                job, wait = self._next(inbox)
                if answer is not None:
                    answer()
                if wait:
                    job = inbox.get()
        finally:
            connections.close_all()

    def shutdown(self, timeout: float = SHUTDOWN_SECONDS) -> None:
        """Stop taking calls; each thread finishes what it runs and what is queued, closes its
        connections and ends (waiting at most ``timeout`` for them)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            workers = list(self._workers)
        for inbox in idle:
            inbox.put(None)
        deadline = time.monotonic() + timeout
        for worker in workers:
            if worker is not threading.current_thread():
                worker.join(max(0.0, deadline - time.monotonic()))


def _handle(job: _Job) -> Callable[[], None] | None:
    """Run ``job``'s call; what hands its outcome to the caller's loop (None: not run, its
    caller gave up before it started)."""
    loop, future, context, func, args = job
    if future.cancelled():
        return None
    result, error = None, None
    try:
        result = context.run(_call, func, args)
    except BaseException as exc:  # the caller's to handle, as an executor hands it on
        error = exc

    def answer() -> None:
        with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits
            loop.call_soon_threadsafe(_settle, future, result, error)

    return answer


_pool = Pool()
_pool_pid = os.getpid()


def pool() -> Pool:
    """This process's pool (a forked child makes its own: the parent's threads are not in it)."""
    global _pool, _pool_pid
    if _pool_pid != os.getpid():
        _pool, _pool_pid = Pool(_pool.threads), os.getpid()
    return _pool


def shutdown(timeout: float = SHUTDOWN_SECONDS) -> None:
    """Close the pool's connections and stop its threads; the next ``run`` starts a new pool."""
    global _pool
    old, _pool = pool(), Pool(_pool.threads)
    old.shutdown(timeout)


async def run[T](func: Callable[..., T], /, *args: Any, thread_sensitive: bool = False) -> T:
    """``func(*args)`` in a worker thread, inside a request boundary; its result or exception.

    ``thread_sensitive``: in asgiref's one thread for sync code rather than the pool's.
    """
    if thread_sensitive:
        return await sync_to_async(_call, thread_sensitive=True)(func, args)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    pool().submit((loop, future, contextvars.copy_context(), func, args))
    return await future


def wrap[**P, T](
    func: Callable[P, T], *, thread_sensitive: bool = False
) -> Callable[P, Awaitable[T]]:
    """``func`` as a coroutine function whose every call is one ``run`` (keywords allowed)."""

    async def hop(*args: P.args, **kwargs: P.kwargs) -> T:
        call = functools.partial(func, **kwargs) if kwargs else func
        return await run(call, *args, thread_sensitive=thread_sensitive)

    return functools.wraps(func)(hop)
