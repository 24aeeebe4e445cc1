"""Tell open trail pages that a todo has new spans, at most once per todo per second.

The store announces every batch it wrote spans from (``otlp/sql/store.sql``: a ``spans``
change per todo, heard by this process's change feed, ``switchboard/lib/changefeed.py``).
Exporters send batches every few seconds per process, and several processes of one agent may
send for one todo at once; a page re-reads its whole trail on every announcement, so a burst
of batches would make a burst of reads. ``heard`` passes a todo on at once when it was not
passed on in the last second, and otherwise once more when that second is up (one timer per
todo, however many batches arrive meanwhile): the last batch is always shown, at most a second
late. It passes a todo on as a ``spans_due`` change told to the feed's consumers, which the
Board's live relay redraws (it ignores the raw ``spans``): this module imports no consumer.
Per process: every web process hears every batch and throttles on its own, which stays bounded.

Everything runs on the feed's event loop, so the map needs no lock.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

from switchboard.lib import changefeed
from switchboard.lib.changefeed import Change

INTERVAL_SECONDS = 1.0

_last: dict[str, float] = {}  # todo id → monotonic time it was last passed on
_pending: set[str] = set()  # todos with a timer waiting


def heard(change: Change) -> None:
    """The change feed's consumer: pass a ``spans`` change on, coalesced as the docstring says."""
    if change.kind != changefeed.SPANS or not change.todo_id:
        return
    now = time.monotonic()
    last = _last.get(change.todo_id)
    if last is None or now - last >= INTERVAL_SECONDS:
        _last[change.todo_id] = now
        _pass_on(change)
    elif change.todo_id not in _pending:
        _pending.add(change.todo_id)
        asyncio.get_running_loop().call_later(last + INTERVAL_SECONDS - now, _later, change)
    _prune(now)


def _later(change: Change) -> None:
    _pending.discard(change.todo_id)
    _last[change.todo_id] = time.monotonic()
    _pass_on(change)


def _pass_on(change: Change) -> None:
    changefeed.FEED.tell(dataclasses.replace(change, kind=changefeed.SPANS_DUE))


def _prune(now: float) -> None:
    # Forget todos quiet for a while, so the map holds only recently active ones.
    if len(_last) > 10_000:
        for todo_id, at in list(_last.items()):
            if now - at > 60 and todo_id not in _pending:
                del _last[todo_id]
