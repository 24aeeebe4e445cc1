"""Reads of ``todo_attempts`` by todo id: the attempt history a todo's page, MCP's get_todo and
a claim's result carry.

No scope check here: the attempts app sits below todos and cannot read a todo's owner. Callers
have matched the todo in the caller's scope first (``todos/queries.py`` ``todo_detail`` and
``attempts_for_todo``; a claim's own statement), and pass what they read of it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import fields

from attempts.models import TodoAttempt
from attempts.types import USAGE_COLUMNS, AttemptView
from switchboard.lib.errors import InvalidInput

ATTEMPTS_LIMIT_MAX = 200
# The view's columns and the usage ones (AttemptView.usage is built from them).
_ATTEMPT_FIELDS = [
    *(f.name for f in fields(AttemptView) if f.name != "usage"),
    *USAGE_COLUMNS,
    "cost_usd",
]


def check_attempts_limit(limit: int) -> None:
    """Refuse a history length that is not an integer from 1 to ``ATTEMPTS_LIMIT_MAX``."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidInput("attempts_limit", "must be an integer")
    if not 1 <= limit <= ATTEMPTS_LIMIT_MAX:
        raise InvalidInput("attempts_limit", f"must be between 1 and {ATTEMPTS_LIMIT_MAX}")


def attempt_history(
    todo_id: str, limit: int, attempts_total: int, lease_expires_at: dt.datetime | None
) -> tuple[AttemptView, ...]:
    """The newest ``limit`` attempts of a todo already matched in scope, the open one showing
    the todo's live lease (``AttemptView.with_lease``: its own copy lags it by up to the sampled
    write's minute)."""
    # Uses index: todo_attempts_pkey (todo_id, seq), read backwards.
    rows = TodoAttempt.objects.filter(todo_id=todo_id).order_by("-seq").values(*_ATTEMPT_FIELDS)
    return tuple(
        AttemptView.from_row(row).with_lease(attempts_total, lease_expires_at)
        for row in rows[:limit]
    )


def recent_closed_attempts(todo_id: str, n: int) -> tuple[AttemptView, ...]:
    """The ``n`` most recently closed attempts of a todo, newest first (no scope check: callers
    have already matched the todo in scope)."""
    rows = (
        TodoAttempt.objects.filter(todo_id=todo_id, ended_at__isnull=False)
        .order_by("-seq")
        .values(*_ATTEMPT_FIELDS)[:n]
    )
    return tuple(AttemptView.from_row(row) for row in rows)
