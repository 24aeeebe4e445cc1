"""Bulk actions: one human's retry, cancel or forget of every todo a filter selects, in one
statement (docs/decisions/0020-queue-pause-and-bulk-actions.md)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction

from attempts import rules
from switchboard.lib import metrics
from switchboard.lib.actors import Actor
from switchboard.lib.errors import InvalidInput
from switchboard.scope import Scope
from todos.filters import TodoFilters
from todos.lifecycle.core import activity_params, counted, run
from todos.lifecycle.statements import bulk_statement
from todos.limits import BULK_MAX
from todos.types import BulkResult


def _bulk_params(seen_at: dt.datetime, limit: int) -> dict[str, Any]:
    if not isinstance(seen_at, dt.datetime) or seen_at.tzinfo is None:
        raise InvalidInput("seen_at", "must be the time of the count, with its time zone")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= BULK_MAX:
        raise InvalidInput("limit", f"must be between 1 and {BULK_MAX}")
    return {"seen_at": seen_at, "limit": limit}


def _bulk(
    action: str,
    human_id: int,
    filters: TodoFilters,
    params: dict[str, Any],
) -> list[dict[str, Any]]:
    if filters.matches_nothing:  # PostgreSQL could not compare the value: nothing matches
        return []
    selection, selection_params = filters.where()
    scope = Scope.of_human(human_id)
    rows = run(
        bulk_statement(action, selection), {**params, **selection_params, **scope.params}, None
    )
    return rows


def bulk_retry(
    human_id: int,
    filters: TodoFilters,
    *,
    seen_at: dt.datetime,
    limit: int = BULK_MAX,
    actor_id: int | None = None,
) -> BulkResult:
    """Retry the dead letters of the human's todos that ``filters`` select, at most ``limit``
    (oldest first), each as ``retry`` retries one, in one statement (bulk_retry.sql).

    ``seen_at`` is the time of the count the human confirmed (``queries.bulk_count``): a todo
    dead-lettered after it is left alone. Each retry is a ``human_action`` row of ``actor_id``
    (default ``human_id``) marked ``bulk``; the doorbell rings once per queue refilled.
    """
    params = {
        **_bulk_params(seen_at, limit),
        **activity_params(
            "human_action", Actor.human(actor_id or human_id), "retry", detail={"bulk": True}
        ),
    }
    rows = _bulk("retry", human_id, filters, params)
    if rows:
        counted("retry", n=len(rows), activity="human_action")
    return BulkResult(tuple(r["id"] for r in rows))


def bulk_cancel(
    human_id: int,
    filters: TodoFilters,
    *,
    seen_at: dt.datetime,
    reason: str | None = None,
    limit: int = BULK_MAX,
    actor_id: int | None = None,
) -> BulkResult:
    """Cancel the unfinished todos of the human's that ``filters`` select, at most ``limit``
    (oldest first), each as ``cancel`` cancels one (an open attempt closes canceled/canceled),
    in one statement (bulk_cancel.sql).

    ``seen_at`` is the time of the count the human confirmed: a todo created or claimed after
    it is left alone, and so is one locked by a transition at that moment. Each cancel is a
    ``human_action`` row of ``actor_id`` (default ``human_id``) marked ``bulk``.
    """
    text, truncated = rules.summary(reason)
    params = {
        **_bulk_params(seen_at, limit),
        "summary": text,
        "summary_truncated": truncated,
        **activity_params(
            "human_action",
            Actor.human(actor_id or human_id),
            "cancel",
            message=reason,
            message_field="reason",
            detail={"bulk": True},
        ),
    }
    rows = _bulk("cancel", human_id, filters, params)
    if rows:
        counted("cancel", n=len(rows), activity="human_action")
        closed = sum(1 for r in rows if r["attempt_seq"] is not None)
        if closed:
            transaction.on_commit(lambda: metrics.attempt_closed("canceled", "canceled", closed))
    return BulkResult(tuple(r["id"] for r in rows))


def bulk_forget(
    human_id: int,
    filters: TodoFilters,
    *,
    seen_at: dt.datetime,
    limit: int = BULK_MAX,
    actor_id: int | None = None,
) -> BulkResult:
    """Forget the finished todos of the human's that ``filters`` select, at most ``limit``
    (oldest first), each as ``forget`` forgets one, in one statement (bulk_forget.sql); a todo
    finished after the count ``seen_at`` is left alone. Spans are ``activity/forget.py``'s to
    delete, in the same transaction."""
    params = {
        **_bulk_params(seen_at, limit),
        **activity_params(
            "human_action", Actor.human(actor_id or human_id), "forget", detail={"bulk": True}
        ),
    }
    rows = _bulk("forget", human_id, filters, params)
    if rows:
        counted("forget", n=len(rows), activity="human_action")
    return BulkResult(tuple(r["id"] for r in rows))
