"""Hybrid retention: finished todos by age and by count per endpoint; stale events.

Settings and scheduling: docs/guides/operations.md.

A todo's attempts go with it by cascade: live history is never pruned here (the per-todo cap
in the claim statement bounds it instead). Its MCP task rows go in the retention statement
itself. What an app above the todos core keeps of a todo without a foreign key and must not
outlive it as it was (an alert quoting its title) is that app's to erase: it registers an
eraser here (``register_eraser``, from its ``ready()``, as the alerts app registers its sweeper
step with ``todos/sweeps.py``), which runs in each batch's transaction after the statement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction

from switchboard import runtime_settings
from switchboard.lib.sql import fetch_all, fetch_one, load

_SQL = Path(__file__).parent / "sql"
RETENTION_TODOS = load(_SQL, "retention_todos")
RETENTION_TODOS_COUNT = load(_SQL, "retention_todos_count")
RETENTION_EVENTS = load(_SQL, "retention_events")
RETENTION_EVENTS_COUNT = load(_SQL, "retention_events_count")

BATCH = 1000

# The erasers of the apps above the todos core, by name: each is given the ids of the todos a
# batch deleted, inside that batch's transaction (the rows are gone to everyone once it
# commits), and erases or unlinks what its own tables hold of them. One that raises undoes the
# batch, which the next run deletes again.
type Eraser = Callable[[tuple[str, ...]], object]
_ERASERS: dict[str, Eraser] = {}


def register_eraser(name: str, eraser: Eraser) -> None:
    """Run ``eraser(ids)`` in every retention batch's transaction that deleted todos (once per
    name; a second call replaces)."""
    _ERASERS[name] = eraser


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
    and the command call it, its own transaction (with the registered erasers' work on the
    todos it deleted), so a large backlog never holds locks for long; deletion stops when a
    batch comes back short.
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
        RETENTION_TODOS,
        {"days": days, "max_terminal": max_terminal, "batch": batch},
        batch,
        after=_erase,
    )
    deleted_events, _ = _drain(RETENTION_EVENTS, {"days": days, "batch": batch}, batch)
    return RetentionResult(
        todos=deleted_todos, events=deleted_events, dry_run=False, activity=activity
    )


def _erase(rows: Sequence[Mapping[str, Any]]) -> None:
    """Run the registered erasers on the todos of a batch (``rows``, the statement's)."""
    deleted = tuple(str(row["id"]) for row in rows)
    if not deleted:
        return
    for eraser in _ERASERS.values():
        eraser(deleted)


def _drain(
    sql: str,
    params: dict[str, int],
    batch: int,
    *,
    after: Callable[[Sequence[Mapping[str, Any]]], None] | None = None,
) -> tuple[int, int]:
    """Run ``sql`` batch by batch until one comes back short, each batch (with ``after`` of its
    rows) in a transaction of its own; return the rows it deleted and the sum of their
    ``activity`` counts (0 for a statement that returns none)."""
    total = activity = 0
    while True:
        with transaction.atomic():
            rows = fetch_all(sql, params)
            if after is not None:
                after(rows)
        total += len(rows)
        activity += sum(int(row.get("activity") or 0) for row in rows)
        if len(rows) < batch:
            return total, activity
