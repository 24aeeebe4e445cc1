"""Tell open trail pages that a todo has new spans, at most once per todo per second.

Exporters send batches every few seconds per process, and several processes of one agent may
send for one todo at once; a page re-reads its whole trail on every announcement, so a burst
of batches would make a burst of reads. ``spans_stored`` announces a todo at once when it was
not announced in the last second, and otherwise once more when that second is up (one timer
per todo, however many batches arrive meanwhile): the last batch is always shown, at most a
second late. Per process: with several web processes a todo may be refreshed once per second
by each, which stays bounded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from uuid import UUID

from django.db import connection

from todos import events

INTERVAL_SECONDS = 1.0

_lock = threading.Lock()
_last: dict[str, float] = {}  # todo id → monotonic time of its last announcement
_pending: set[str] = set()  # todos with a timer waiting


def spans_stored(endpoint_id: UUID, todo_ids: Iterable[str]) -> None:
    """Announce each todo that just had spans committed, coalesced as the docstring says."""
    now = time.monotonic()
    due: list[str] = []
    with _lock:
        for todo_id in set(todo_ids):
            last = _last.get(todo_id)
            if last is None or now - last >= INTERVAL_SECONDS:
                _last[todo_id] = now
                due.append(todo_id)
            elif todo_id not in _pending:
                _pending.add(todo_id)
                timer = threading.Timer(
                    last + INTERVAL_SECONDS - now, _later, args=(endpoint_id, todo_id)
                )
                timer.daemon = True
                timer.start()
        _prune(now)
    _announce(endpoint_id, due)


def _later(endpoint_id: UUID, todo_id: str) -> None:
    with _lock:
        _pending.discard(todo_id)
        _last[todo_id] = time.monotonic()
    try:
        _announce(endpoint_id, [todo_id])
    finally:
        connection.close()  # a listener may have read the database on this timer's thread


def _announce(endpoint_id: UUID, todo_ids: list[str]) -> None:
    # The state is unchanged by spans; listeners re-read what they show.
    events.announce_all((todo_id, endpoint_id, "") for todo_id in todo_ids)


def _prune(now: float) -> None:
    # Forget todos quiet for a while, so the map holds only recently active ones.
    if len(_last) > 10_000:
        for todo_id, at in list(_last.items()):
            if now - at > 60 and todo_id not in _pending:
                del _last[todo_id]
