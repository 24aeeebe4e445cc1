"""The day partitions of ``todo_spans``: made ahead, and dropped past ``span_retention_days``.

``todo_spans`` is partitioned by ``received_at``, one partition per UTC day, with a DEFAULT
partition for any row whose day has none (otlp/migrations/0006_partitioned_spans.py;
docs/decisions/0040-span-partitions.md). The sweeper runs ``step`` at the end of its passes
(registered by ``otlp/apps.py``, so the todos core never imports this app), at most once per
``EVERY_SECONDS`` in a process. Each run (``maintain``):

1. makes the partitions of today and the next ``AHEAD_DAYS`` days that do not exist, so a
   span never lands in the default partition while a sweeper runs at least every two days;
2. drops each partition whose day ended ``span_retention_days`` ago or more: retention of a
   whole day is one catalog change, never a row deleted one by one;
3. deletes the default partition's rows older than the same cutoff (rows that came while the
   sweeper was away and their day had no partition).

Concurrency: several sweepers may run it at once. Each add or drop is one statement and its
own transaction, calling a database function that takes a transaction-level advisory lock and
then checks the partition's existence (``sb_span_partition_add``/``_drop``), so two runs never
make or drop the same partition twice: the second finds the work done. Adding locks
``todo_spans`` SHARE UPDATE EXCLUSIVE (ingest and reads go on) and, for its foreign key,
``todos`` SHARE ROW EXCLUSIVE (the lifecycle's writes wait for it); dropping locks
``todo_spans`` ACCESS EXCLUSIVE (ingest and span reads wait). Both are catalog changes of a few
milliseconds, but a lock request waits behind the transactions holding the table and every
request after it queues behind it, so each statement gives up after ``LOCK_TIMEOUT`` (the
lock's SQLSTATE, nothing changed) and the next run tries again: a partition is made days before
it is needed, and a drop can wait.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import OperationalError, transaction

from switchboard import runtime_settings
from switchboard.lib.sql import fetch_one, load

_SQL = Path(__file__).parent / "sql"
PLAN = load(_SQL, "span_partitions")
ADD = load(_SQL, "span_partition_add")
DROP = load(_SQL, "span_partition_drop")
PRUNE_DEFAULT = load(_SQL, "span_default_prune")

# Today's partition and the next two days': two days of sweeper outage before a span lands in
# the default partition.
AHEAD_DAYS = 2
LOCK_TIMEOUT = "200ms"
EVERY_SECONDS = 60.0
LOCK_NOT_AVAILABLE = "55P03"

_ran_at: float | None = None  # monotonic time of this process's last run


@dataclass
class PartitionReport:
    """What one run changed: partitions made and dropped (their days), default-partition rows
    deleted, and the days whose add or drop gave up on a lock (retried at the next run)."""

    added: list[dt.date] = field(default_factory=list)
    dropped: list[dt.date] = field(default_factory=list)
    pruned: int = 0
    busy: list[dt.date] = field(default_factory=list)
    days: int = 0

    def lines(self) -> list[str]:
        out = []
        if self.added:
            out.append(f"spans: made partitions for {_days(self.added)}")
        if self.dropped:
            out.append(
                f"spans: dropped the partitions of {_days(self.dropped)}"
                f" (older than {self.days} days)"
            )
        if self.pruned:
            out.append(
                f"spans: deleted {self.pruned} spans older than {self.days} days"
                " from the default partition"
            )
        if self.busy:
            out.append(f"spans: {_days(self.busy)} waited on a lock; trying again next run")
        return out


def _days(days: list[dt.date]) -> str:
    return ", ".join(d.isoformat() for d in days)


def _run(sql: str, params: dict[str, Any]) -> bool | None:
    """One add or drop in its own transaction (a savepoint inside a caller's): its answer, or
    None when a lock was not granted within ``LOCK_TIMEOUT``."""
    try:
        with transaction.atomic():
            row = fetch_one(sql, {**params, "lock_timeout": LOCK_TIMEOUT})
    except OperationalError as exc:
        if getattr(exc.__cause__, "sqlstate", None) != LOCK_NOT_AVAILABLE:
            raise
        return None
    assert row is not None
    return bool(next(iter(row.values())))


def maintain(*, ahead: int = AHEAD_DAYS, days: int | None = None) -> PartitionReport:
    """Make the coming days' partitions, drop those past ``days`` (default: the runtime setting
    ``span_retention_days``) and prune the default partition; what changed."""
    if days is None:
        days = runtime_settings.current().span_retention_days
    report = PartitionReport(days=days)
    plan = fetch_one(PLAN, {"ahead": ahead, "days": days})
    assert plan is not None
    for sql, todo, done_list in (
        (ADD, plan["add"], report.added),
        (DROP, plan["drop"], report.dropped),
    ):
        for day in todo:
            done = _run(sql, {"day": day})
            if done is None:
                report.busy.append(day)
            elif done:
                done_list.append(day)
    pruned = fetch_one(PRUNE_DEFAULT, {"cutoff": plan["cutoff"]})
    report.pruned = int(pruned["pruned"]) if pruned else 0
    return report


def step(pass_report: Any, *, force: bool = False) -> None:
    """The sweeper's spans step (``todos/sweeps.py`` runs it at the end of a pass, at most once
    per ``EVERY_SECONDS`` here unless ``force``): its lines join the pass's."""
    global _ran_at
    now = time.monotonic()
    if not force and _ran_at is not None and now - _ran_at < EVERY_SECONDS:
        return
    _ran_at = now
    report = maintain()
    pass_report.notes.extend(report.lines())
    pass_report.steps["spans"] = report
