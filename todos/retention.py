"""Hybrid retention: finished todos by age and by count per endpoint; stale events.

Settings and scheduling: docs/guides/operations.md.

A todo's attempts go with it by cascade: live history is never pruned here (the per-todo cap
in the claim statement bounds it instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from switchboard import runtime_settings
from switchboard.lib.sql import fetch_all, fetch_one, load

_SQL = Path(__file__).parent / "sql"
RETENTION_TODOS = load(_SQL, "retention_todos")
RETENTION_TODOS_COUNT = load(_SQL, "retention_todos_count")
RETENTION_EVENTS = load(_SQL, "retention_events")
RETENTION_EVENTS_COUNT = load(_SQL, "retention_events_count")

BATCH = 1000


@dataclass(frozen=True, slots=True)
class RetentionResult:
    todos: int
    events: int
    dry_run: bool
    # The activity rows deleted with the todos (by cascade), or that would be.
    activity: int = 0


def run(*, dry_run: bool = False, batch: int | None = None) -> RetentionResult:
    """Delete (or, with ``dry_run``, count) what retention removes, in batches of ``batch``
    (default ``BATCH``).

    Each batch is its own statement and, called outside ``transaction.atomic`` as the sweeper
    and the command call it, its own transaction, so a large backlog never holds locks for
    long; deletion stops when a batch comes back short.
    """
    batch = BATCH if batch is None else batch
    current = runtime_settings.current()
    days, max_terminal = current.retention_days, current.retention_max_terminal
    if dry_run:
        todos = fetch_one(RETENTION_TODOS_COUNT, {"days": days, "max_terminal": max_terminal})
        events = fetch_one(RETENTION_EVENTS_COUNT, {"days": days})
        return RetentionResult(
            todos=todos["n"] if todos else 0,
            events=events["n"] if events else 0,
            dry_run=True,
            activity=int(todos["activity"]) if todos else 0,
        )
    deleted_todos, activity = _drain(
        RETENTION_TODOS, {"days": days, "max_terminal": max_terminal, "batch": batch}, batch
    )
    deleted_events, _ = _drain(RETENTION_EVENTS, {"days": days, "batch": batch}, batch)
    return RetentionResult(
        todos=deleted_todos, events=deleted_events, dry_run=False, activity=activity
    )


def _drain(sql: str, params: dict[str, int], batch: int) -> tuple[int, int]:
    """Run ``sql`` batch by batch until one comes back short; return the rows it deleted and
    the sum of their ``activity`` counts (0 for a statement that returns none)."""
    total = activity = 0
    while True:
        rows = fetch_all(sql, params)
        total += len(rows)
        activity += sum(int(row.get("activity") or 0) for row in rows)
        if len(rows) < batch:
            return total, activity
