"""The sweeper's alert step: evaluate every rule, open and resolve alerts, then send.

Run at the end of every sweeper pass (registered with ``todos/sweeps.py`` by ``alerts/apps.py``):

1. **evaluate**, under its own advisory lock (one sweeper evaluates a pass, the others skip):
   per kind, what fires now (``alerts/evaluate.py``) goes to ``open_alerts.sql`` (new alerts,
   one live per rule and subject; pending ones that held long enough open) and, for the
   condition kinds, to ``resolve_alerts.sql`` (what no longer fires is resolved). A kind's two
   statements commit together, with the messages they queue. The budgets are read once a pass
   for both budget kinds, and a warning its channel would hear together with the exceeded
   alert of the same budget day is not opened (one message, not two; it still counts as
   firing, so an open one is not resolved);
2. **send** what is due (``alerts/deliver.py``), after that commit, outside any transaction.

A kind whose read fails (a budget source that raises, say) is logged and skipped for the pass:
its open alerts are left as they are rather than resolved by a read that saw nothing.

Forgetting a todo (``activity/forget.py``) rewrites its alerts here too (``forget``, registered
with the forget by ``alerts/apps.py``, so that module never imports this app), in the forget's
transaction: the summary and detail without the title, the row kept. Todo retention
(``todos/retention.py``) does the same through ``unlink``, registered with it likewise, which
also sets the alerts' ``todo_id`` NULL: the alert outlives its todo. The evaluation's lock is
what makes both complete: the forget or the retention batch waits for an evaluation in
progress, which may have read the todo before it was forgotten or deleted, and keeps the next
from reading it until it commits (``forget_wait.sql``).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from alerts import deliver, evaluate, messages, sources
from alerts.evaluate import Firing
from alerts.models import EVENT_KINDS, RuleKind
from alerts.sources import BudgetStatusLike
from switchboard.lib import direct
from switchboard.lib.sql import fetch_all, fetch_one, load

log = logging.getLogger(__name__)

LOCK_ALERTS = 0x5B_0101  # pg_try_advisory_lock key (todos/sweeps.py keeps 0x5B_00xx)
TRIM_EVERY_SECONDS = 600.0
_trimmed_at: float | None = None

_SQL = Path(__file__).resolve().parent / "sql"
OPEN_ALERTS = load(_SQL, "open_alerts")
RESOLVE_ALERTS = load(_SQL, "resolve_alerts")
TRIM_ALERTS = load(_SQL, "trim_alerts")
LIVE_KINDS = load(_SQL, "live_kinds")
FORGET_WAIT = load(_SQL, "forget_wait")
FORGOTTEN_ALERTS = load(_SQL, "forgotten_alerts")
FORGET_ALERTS = load(_SQL, "forget_alerts")
BUDGET_KINDS = (RuleKind.BUDGET_WARNING, RuleKind.BUDGET_EXCEEDED)


@dataclass
class AlertReport:
    opened: int = 0  # messages queued for alerts that opened or events that fired
    resolved: int = 0
    skipped: bool = False  # another sweeper held the lock
    failed_kinds: list[str] = field(default_factory=list)
    sent: deliver.SendReport | None = None

    def lines(self) -> list[str]:
        out = []
        if self.opened or self.resolved:
            out.append(f"alerts: opened {self.opened}, resolved {self.resolved}")
        if self.failed_kinds:
            out.append(f"alerts: could not evaluate {', '.join(self.failed_kinds)}")
        if self.sent and (self.sent.delivered or self.sent.failed):
            out.append(
                f"alerts: delivered {self.sent.delivered}, failed {self.sent.failed}"
                + (
                    f", breaker opened for {', '.join(self.sent.opened)}"
                    if self.sent.opened
                    else ""
                )
            )
        return out


def apply(
    kind: str, firings: Sequence[Firing], opening: Sequence[Firing] | None = None
) -> tuple[int, int]:
    """Open what fires (``opening``, all of ``firings`` unless given) and resolve what no longer
    fires for ``kind``, in one transaction; (messages queued for openings, alerts resolved)."""
    event = kind in EVENT_KINDS
    opening = firings if opening is None else opening
    with transaction.atomic():
        row = fetch_one(
            OPEN_ALERTS,
            {
                "event": event,
                "rule_ids": [f.rule_id for f in opening],
                "subjects": [f.subject for f in opening],
                "endpoint_ids": [f.endpoint_id for f in opening],
                "queues": [f.queue for f in opening],
                "todo_ids": [f.todo_id for f in opening],
                "summaries": [f.summary for f in opening],
                "details": [json.dumps(f.detail) for f in opening],
            },
        )
        opened = int(row["opened"]) if row else 0
        resolved = 0
        if not event:
            row = fetch_one(
                RESOLVE_ALERTS,
                {
                    "kind": kind,
                    "rule_ids": [f.rule_id for f in firings],
                    "subjects": [f.subject for f in firings],
                },
            )
            resolved = int(row["resolved"]) if row else 0
    return opened, resolved


type Statuses = Callable[[], Sequence[BudgetStatusLike]]


def firings(
    kind: str, now: dt.datetime, statuses: Statuses | None = None
) -> tuple[list[Firing], list[Firing]]:
    """What ``kind`` finds firing now, and of that what may open: all of it, except a budget
    warning superseded by its channel's exceeded alert on the same budget day
    (``evaluate.unsuperseded``). ``statuses`` reads the budgets (once a pass, for both kinds)."""
    if kind not in BUDGET_KINDS:
        found = evaluate.read(kind)
        return found, found
    rules = evaluate.rule_endpoints(kind)
    if not rules:
        return [], []
    current = statuses() if statuses else sources.budget_statuses(now=now)
    found = evaluate.summarised(kind, evaluate.budget_firings(kind, rules, current))
    if kind != RuleKind.BUDGET_WARNING or not found:
        return found, found
    over_rules = evaluate.rule_endpoints(RuleKind.BUDGET_EXCEEDED)
    over = evaluate.budget_firings(RuleKind.BUDGET_EXCEEDED, over_rules, current)
    return found, evaluate.unsuperseded(found, over, [*rules, *over_rules])


def evaluate_all(report: AlertReport, *, now: dt.datetime | None = None) -> None:
    """Every kind in turn; one kind's failure never stops the others."""
    now = now or timezone.now()
    live = {row["kind"] for row in fetch_all(LIVE_KINDS, {})}
    read: list[Sequence[BudgetStatusLike]] = []

    def statuses() -> Sequence[BudgetStatusLike]:
        # Both budget kinds judge the same figures: a budget crossing 100 % between two reads
        # would otherwise escape the warning's supersession.
        if not read:
            read.append(sources.budget_statuses(now=now))
        return read[0]

    for kind in RuleKind:
        if kind not in live:
            continue
        try:
            opened, resolved = apply(kind, *firings(kind, now, statuses))
        except Exception:
            log.exception("alerts: evaluating %s failed; retrying at the next pass", kind)
            report.failed_kinds.append(str(kind))
            continue
        report.opened += opened
        report.resolved += resolved


def _locked_evaluate(report: AlertReport) -> None:
    # A session-level lock, on a session of its own behind a transaction pooler
    # (switchboard/lib/direct.py).
    with direct.advisory_lock(LOCK_ALERTS) as held:
        if not held:
            report.skipped = True
            return
        evaluate_all(report)


def trim(*, force: bool = False) -> int:
    """Forget old resolved and event alerts, at most once per ``TRIM_EVERY_SECONDS``."""
    global _trimmed_at
    now = time.monotonic()
    if not force and _trimmed_at is not None and now - _trimmed_at < TRIM_EVERY_SECONDS:
        return 0
    _trimmed_at = now
    return len(fetch_all(TRIM_ALERTS, {"keep_days": settings.SWITCHBOARD_ALERTS_KEEP_DAYS}))


def forget(todo_ids: Sequence[str]) -> int:
    """Rewrite the alerts raised about ``todo_ids``, which are being forgotten, without their
    content (``messages.forgotten``); how many. Call inside the forget's transaction: it holds
    the evaluation's lock until that commits (``forget_wait.sql``)."""
    return _rewrite(todo_ids, mark="forgotten", unlink=False)


def unlink(todo_ids: Sequence[str]) -> int:
    """Rewrite the alerts raised about ``todo_ids``, which retention is deleting, as ``forget``
    does, and unlink them (``todo_id`` NULL: the todo is gone); how many. Call inside the
    retention batch's transaction, after its statement: it holds the evaluation's lock until
    that commits, so an evaluation that read a todo before it was deleted has committed its
    alert before this looks, and none reads it again (``forget_wait.sql``)."""
    return _rewrite(todo_ids, mark="deleted", unlink=True)


def _rewrite(todo_ids: Sequence[str], *, mark: str, unlink: bool) -> int:
    if not todo_ids:
        return 0
    fetch_one(FORGET_WAIT, {"key": LOCK_ALERTS})
    rows = fetch_all(FORGOTTEN_ALERTS, {"todo_ids": list(todo_ids)})
    if not rows:
        return 0
    details = [messages.forgotten(json.loads(row["detail"]), mark) for row in rows]
    summaries = [
        messages.summary(
            row["kind"],
            endpoint=row["endpoint"] or str(row["endpoint_id"]),
            queue=row["queue"],
            todo_id=row["todo_id"],
            detail=detail,
        )
        for row, detail in zip(rows, details, strict=True)
    ]
    return len(
        fetch_all(
            FORGET_ALERTS,
            {
                "ids": [row["id"] for row in rows],
                "summaries": summaries,
                "details": [json.dumps(d) for d in details],
                "unlink": unlink,
            },
        )
    )


def run() -> AlertReport:
    """One alert step: evaluate (if this sweeper holds the lock), trim, then send."""
    report = AlertReport()
    _locked_evaluate(report)
    trim()
    report.sent = deliver.send_due()
    return report


def step(pass_report: Any) -> None:
    """The step ``todos/sweeps.py`` runs at the end of a pass: its lines join the pass's."""
    report = run()
    pass_report.notes.extend(report.lines())
    pass_report.steps["alerts"] = report
