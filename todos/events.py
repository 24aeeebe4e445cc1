"""After-commit announcements: which todo changed, for the Board's live pages.

The lifecycle calls ``announce`` for every transition that changes what a page shows (not for a
plain heartbeat, which changes nothing a page shows and is the hottest path). Listeners hear
it once the transaction commits, never before and never for a rollback: inside a caller's
``transaction.atomic`` the announcement waits for the outermost commit; in autocommit the
statement was its own transaction, so it is heard at once.

A listener is told ``(todo_id, endpoint_id, state)`` and nothing else: what a page shows is
re-read through the owner-scoped reads, never carried here. Listeners subscribe at start-up
(``activity.live``'s relay, from ``activity/apps.py``); this module sits in the todos core and
imports nothing above it. A listener that raises is logged and the others are still told: a
live update must never fail the transition that caused it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from uuid import UUID

from django.db import transaction

logger = logging.getLogger(__name__)

type Listener = Callable[[str, UUID, str], None]

_listeners: list[Listener] = []


def subscribe(listener: Listener) -> None:
    """Tell ``listener`` of every committed change from now on (once, however often called)."""
    if listener not in _listeners:
        _listeners.append(listener)


def unsubscribe(listener: Listener) -> None:
    """Stop telling ``listener``; a listener never subscribed is ignored."""
    if listener in _listeners:
        _listeners.remove(listener)


def announce(todo_id: str, endpoint_id: UUID, state: str) -> None:
    """Tell the listeners, after commit, that ``todo_id`` (on ``endpoint_id``) changed."""
    if _listeners:
        transaction.on_commit(lambda: _tell(((todo_id, endpoint_id, state),)))


def announce_all(changes: Iterable[tuple[str, UUID, str]]) -> None:
    """``announce`` each ``(todo_id, endpoint_id, state)`` of a statement that moved several
    todos (a sweep, a revocation), with one after-commit callback for all of them."""
    if not _listeners:
        return
    batch = tuple(changes)
    if batch:
        transaction.on_commit(lambda: _tell(batch))


def _tell(batch: tuple[tuple[str, UUID, str], ...]) -> None:
    for listener in tuple(_listeners):
        for todo_id, endpoint_id, state in batch:
            try:
                listener(todo_id, endpoint_id, state)
            except Exception:
                logger.exception("live update listener failed for todo %s", todo_id)
