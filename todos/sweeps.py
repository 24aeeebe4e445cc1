"""The sweeps (docs/guides/operations.md) and the loop that runs them.

Every sweep is a conditional statement on rows it locks SKIP LOCKED, so any number of sweepers
may run at once without double-acting on a row. A pass also takes a session-level advisory lock
per sweep, so of several sweepers one does each pass's work and the others skip it instead of
racing for the same rows.

Transactions: every batch is its own statement and its own transaction (autocommit), so a batch
commits, and releases its row locks, before the next one starts, and a large backlog (a
retention catch-up, a mass of lapsed leases) never becomes one long transaction holding locks
on everything it touched. That is why the pass's lock is session-level, not transaction-level:
it must outlive the batches' commits. It is released when the sweep ends, or with the
connection if the pass dies with it. Behind a transaction pooler it is held on a direct session
of its own (switchboard/lib/direct.py), since a pooled session is lent for one transaction.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from switchboard import oauth
from switchboard.lib import direct
from todos import budgets, lifecycle, limits, overview, push, retention, schedules

log = logging.getLogger(__name__)

# pg_try_advisory_lock keys, one per sweep (arbitrary, stable, project-wide unique).
LOCK_REAP = 0x5B_0001
LOCK_REQUEUE = 0x5B_0002
LOCK_RETENTION = 0x5B_0003
LOCK_RING = 0x5B_0004
LOCK_OVERVIEW = 0x5B_0005
LOCK_SCHEDULES = 0x5B_0006
LOCK_BUDGETS = 0x5B_0007

RETENTION_EVERY_SECONDS = 600.0
# The unclaimed re-ring reads every stale pending todo, so it runs once a minute, not every pass
# (docs/decisions/0015-rings-never-lost.md).
UNCLAIMED_EVERY_SECONDS = 60.0
_unclaimed_at: float | None = None  # monotonic time of this process's last unclaimed scan
_overview_at: float | None = None  # monotonic time of this process's last Overview rollup


@dataclass
class PassReport:
    reaped_requeued: list[str] = field(default_factory=list)
    reaped_dead_lettered: list[str] = field(default_factory=list)
    # Run timeouts: failed with a retry scheduled, as a failure is (reap.sql).
    reaped_retry_scheduled: list[str] = field(default_factory=list)
    # Dead-lettered by a passed start_by or finish_by (deadlines.sql).
    deadlines: list[str] = field(default_factory=list)
    retries_requeued: list[str] = field(default_factory=list)
    retention: retention.RetentionResult | None = None
    # The OAuth tokens and codes the retention step cleared (switchboard/oauth.py).
    oauth_cleared: oauth.Cleared | None = None
    rung: list[str] = field(default_factory=list)
    pushes: push.PushReport | None = None
    rollup: overview.RollupResult | None = None
    scheduled: list[schedules.Fired] = field(default_factory=list)
    # Dead-lettered past their max_cost_usd (over_cap.sql); queues paused for a spent daily
    # budget, and pauses lifted at the next UTC day or once their budget is no longer spent.
    over_cap: list[str] = field(default_factory=list)
    budget_paused: list[str] = field(default_factory=list)
    pauses_lifted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    # What the registered steps (``register_step``) said, a line each, and their own reports.
    notes: list[str] = field(default_factory=list)
    steps: dict[str, Any] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """Human-readable lines for what changed; empty when nothing did."""
        out = []
        if self.reaped_requeued:
            out.append(f"reap: requeued {len(self.reaped_requeued)}: {_ids(self.reaped_requeued)}")
        if self.reaped_dead_lettered:
            out.append(
                f"reap: dead-lettered {len(self.reaped_dead_lettered)}:"
                f" {_ids(self.reaped_dead_lettered)}"
            )
        if self.reaped_retry_scheduled:
            out.append(
                f"reap: run timed out, retry scheduled {len(self.reaped_retry_scheduled)}:"
                f" {_ids(self.reaped_retry_scheduled)}"
            )
        if self.deadlines:
            out.append(f"deadlines: dead-lettered {len(self.deadlines)}: {_ids(self.deadlines)}")
        if self.over_cap:
            out.append(f"over_cap: dead-lettered {len(self.over_cap)}: {_ids(self.over_cap)}")
        if self.budget_paused:
            out.append(f"budgets: paused {len(self.budget_paused)}: {_ids(self.budget_paused)}")
        if self.pauses_lifted:
            out.append(f"budgets: resumed {len(self.pauses_lifted)}: {_ids(self.pauses_lifted)}")
        if self.retries_requeued:
            out.append(
                f"requeue_retries: requeued {len(self.retries_requeued)}:"
                f" {_ids(self.retries_requeued)}"
            )
        created = [f.todo_id for f in self.scheduled if f.todo_id]
        if created:
            out.append(f"schedules: created {len(created)}: {_ids(created)}")
        for f in self.scheduled:
            if f.skipped or f.error:
                what = f"skipped {f.ticks} missed" if f.skipped else f"refused: {f.error}"
                out.append(f"schedules: schedule {f.schedule_id} at {f.tick.isoformat()}: {what}")
        if self.rung:
            out.append(f"ring: rang {len(self.rung)}: {_ids(self.rung)}")
        if self.pushes and (self.pushes.delivered or self.pushes.failed):
            out.append(
                f"push: delivered {self.pushes.delivered}, failed {self.pushes.failed}"
                + (f", breaker opened for {_ids(self.pushes.opened)}" if self.pushes.opened else "")
            )
        if self.retention and (self.retention.todos or self.retention.events):
            out.append(
                f"retention: deleted {self.retention.todos} todos"
                f" ({self.retention.activity} activity rows), {self.retention.events} events"
            )
        if self.oauth_cleared and self.oauth_cleared.total:
            cleared = self.oauth_cleared
            out.append(
                f"retention: cleared {cleared.access_tokens} OAuth access tokens,"
                f" {cleared.refresh_tokens} refresh tokens, {cleared.codes} authorization codes,"
                f" {cleared.spent_codes} exchanged codes' records"
            )
        out.extend(self.notes)
        return out


def _ids(ids: list[str], shown: int = 10) -> str:
    more = f" (+{len(ids) - shown} more)" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more


def _locked(key: int, work: Callable[[], None]) -> bool:
    """Run ``work`` holding the session-level advisory lock ``key``; False if another holds it.

    ``work`` runs in the caller's transaction state: in autocommit (the sweeper) each of its
    statements commits as it returns. The lock is released when ``work`` ends, however it ends;
    it is held on a session of its own when Django's connection goes through a transaction
    pooler (``switchboard/lib/direct.py``), on Django's connection otherwise.
    """
    with direct.advisory_lock(key) as held:
        if not held:
            return False
        work()
    return True


def reap_all(report: PassReport) -> None:
    """Dead-letter every todo whose start_by or finish_by passed, then reap every lapsed lease,
    batch by batch. Deadlines first: a lease capped at its finish_by lapses with it, and is
    the deadline's (timed_out, no retry), not the reaper's."""
    while True:
        ids = lifecycle.dead_letter_late()
        report.deadlines.extend(ids)
        if len(ids) < limits.SWEEP_BATCH:
            break
    while True:
        result = lifecycle.reap()
        report.reaped_requeued.extend(result.requeued)
        report.reaped_dead_lettered.extend(result.dead_lettered)
        report.reaped_retry_scheduled.extend(result.retry_scheduled)
        done = len(result.requeued) + len(result.dead_lettered) + len(result.retry_scheduled)
        if done < limits.SWEEP_BATCH:
            return


def requeue_all(report: PassReport) -> None:
    """Requeue every failed todo whose retry is due, batch by batch."""
    while True:
        ids = lifecycle.requeue_due_retries()
        report.retries_requeued.extend(ids)
        if len(ids) < limits.SWEEP_BATCH:
            return


def ring_all(report: PassReport, *, unclaimed: bool = False) -> None:
    """Ring every pending todo that is due a ring (lifecycle.ring_due), batch by batch: the
    recent scan, and the unclaimed one too when ``unclaimed``."""
    for scan in lifecycle.RING_SCANS if unclaimed else ("gate", "push", "not_before"):
        while True:
            rung = lifecycle.ring_due(scan)
            report.rung.extend(r.todo_id for r in rung)
            if len(rung) < limits.SWEEP_BATCH:
                break


def rings(report: PassReport, *, unclaimed: bool | None = None, with_pushes: bool = True) -> None:
    """The pass's ring step: due rings (committed first), then, ``with_pushes``, the push rings
    that are due, sent outside any transaction (todos/push.py; the ``Sweeper`` loop sends them
    from a thread of its own instead). ``unclaimed`` None: the unclaimed scan runs when this
    process last ran it ``UNCLAIMED_EVERY_SECONDS`` ago or more."""
    global _unclaimed_at
    now = time.monotonic()
    if unclaimed is None:
        unclaimed = _unclaimed_at is None or now - _unclaimed_at >= UNCLAIMED_EVERY_SECONDS
    if not _locked(LOCK_RING, lambda: ring_all(report, unclaimed=unclaimed)):
        report.skipped.append("ring")
    elif unclaimed:
        _unclaimed_at = now
    if with_pushes:
        report.pushes = push.send_due()


def fire_schedules(report: PassReport) -> None:
    """The pass's schedules step: fire every due tick (todos/schedules.py). Exactly once does not
    rest on the lock (the fire step is safe in any number of processes); the lock spares a
    second sweeper the scan."""

    def work() -> None:
        while True:
            fired = schedules.fire_due()
            report.scheduled.extend(fired)
            if len(fired) < lifecycle.SWEEP_BATCH:
                return

    if not _locked(LOCK_SCHEDULES, work):
        report.skipped.append("schedules")


def roll_up(report: PassReport, *, force: bool = False) -> None:
    """The pass's Overview step (todos/overview.py): at most once per
    ``overview.EVERY_SECONDS`` in this process (always when ``force``), under its lock."""
    global _overview_at
    now = time.monotonic()
    if not force and _overview_at is not None and now - _overview_at < overview.EVERY_SECONDS:
        return

    def work() -> None:
        report.rollup = overview.roll_up()

    if not _locked(LOCK_OVERVIEW, work):
        report.skipped.append("overview")
    _overview_at = now


# Steps of apps above this one (the alerts app's), run at the end of every pass, in order of
# registration: an app registers its step in its AppConfig.ready(), so this module never imports
# it. A step's failure is logged and never ends the pass for the steps after it.
_STEPS: dict[str, Callable[[PassReport], None]] = {}


def register_step(name: str, step: Callable[[PassReport], None]) -> None:
    """Run ``step(report)`` at the end of every pass (once per name; a second call replaces)."""
    _STEPS[name] = step


def run_steps(report: PassReport) -> None:
    for name, step in list(_STEPS.items()):
        try:
            step(report)
        except Exception:
            log.exception("sweep step %s failed; retrying at the next pass", name)


def budgets_all(report: PassReport, *, now: dt.datetime | None = None) -> None:
    """End the todos past their cost cap (the ingest ends them as it sees them; this catches
    what it missed), lift the pauses whose day is over and the budget pauses whose budget is no
    longer spent, then pause what a spent daily budget covers: the queue, or every queue of the
    endpoint (todos/budgets.py).

    Every pass looks at every spent budget again: ``queue_pauses`` says which queue a budget
    already paused today and which an operator resumed since (that resume holds for the day),
    so a queue an endpoint's work reaches later in the day is paused at the next pass, and two
    sweepers, or a restarted one, do the same."""
    now = now or timezone.now()
    while True:
        ids = lifecycle.end_over_cap()
        report.over_cap.extend(ids)
        if len(ids) < limits.SWEEP_BATCH:
            break
    report.pauses_lifted.extend(f"{e}/{q}" for e, q in lifecycle.lift_due_pauses())
    start = budgets.day_start(now)
    spent = [s for s in budgets.budget_statuses(now=now) if s.spent]
    lifted = lifecycle.lift_unspent_pauses([(s.endpoint_id, s.queue) for s in spent])
    report.pauses_lifted.extend(f"{e}/{q}" for e, q in lifted)
    for status in spent:
        if status.queue is not None:
            pairs = [(status.endpoint_id, status.queue)]
        else:
            queues = budgets.endpoint_queues(status.endpoint_id, now=now)
            pairs = [(status.endpoint_id, q) for q in queues]
        opened = lifecycle.pause_for_budget(pairs, reason=f"{status.kind}_budget", day_start=start)
        report.budget_paused.extend(f"{e}/{q}" for e, q in opened)


def run_pass(*, with_retention: bool = False, with_pushes: bool = True) -> PassReport:
    """One pass of every sweep. ``with_pushes`` False leaves the push rings to another caller of
    ``push.send_due`` (the ``Sweeper`` loop's pusher thread)."""
    report = PassReport()
    if not _locked(LOCK_BUDGETS, lambda: budgets_all(report)):
        report.skipped.append("budgets")
    if not _locked(LOCK_REAP, lambda: reap_all(report)):
        report.skipped.append("reap")
    if not _locked(LOCK_REQUEUE, lambda: requeue_all(report)):
        report.skipped.append("requeue_retries")
    # Before the rings, so a scheduled todo's ring goes out in the same pass.
    fire_schedules(report)
    rings(report, with_pushes=with_pushes)
    roll_up(report)
    if with_retention:

        def retain() -> None:
            report.retention = retention.run()
            report.oauth_cleared = oauth.clear_expired_tokens()

        if not _locked(LOCK_RETENTION, retain):
            report.skipped.append("retention")
    run_steps(report)
    return report


class Sweeper:
    """The sweeper loop: a pass every ``interval`` seconds until ``stop()`` is called.

    Used by ``manage.py sweeper`` (its own process) and by ``manage.py serve`` (a thread in the
    web process). A pass that fails (the database restarting, say) is logged and retried at the
    next tick; the loop itself never dies of it.
    """

    def __init__(self, interval: float, emit: Callable[[str], None] | None = None) -> None:
        self.interval = interval
        self.emit = emit or log.info
        self._stop = threading.Event()
        # None until the first pass, which always runs retention: time.monotonic() counts from
        # boot, so a start value of 0.0 skipped retention for the first hour after a reboot.
        self._last_retention: float | None = None

    def stop(self) -> None:
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def run(self) -> None:
        """The loop. Push rings go out from a thread of their own (``push_loop``): a receiver
        that is slow to answer (each push is bounded by the push timeout, a pass by its batch)
        delays other pushes, never a reap, a requeue or a ring."""
        pusher = threading.Thread(target=self.push_loop, name="sweeper-pushes", daemon=True)
        pusher.start()
        try:
            while not self._stop.is_set():
                self.tick(with_pushes=False)
                self._stop.wait(self.interval)
        finally:
            connection.close()

    def push_loop(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    report = push.send_due()
                except Exception:
                    log.exception("push pass failed; retrying at the next tick")
                    connection.close()
                else:
                    if report.delivered or report.failed:
                        for line in PassReport(pushes=report).lines():
                            self.emit(line)
                self._stop.wait(self.interval)
        finally:
            connection.close()

    def tick(self, *, with_pushes: bool = True) -> PassReport | None:
        now = time.monotonic()
        last = self._last_retention
        with_retention = last is None or now - last >= RETENTION_EVERY_SECONDS
        try:
            report = run_pass(with_retention=with_retention, with_pushes=with_pushes)
        except Exception:
            log.exception("sweep pass failed; retrying at the next tick")
            connection.close()
            return None
        if with_retention:
            self._last_retention = now
        for line in report.lines():
            self.emit(line)
        return report


_background: Sweeper | None = None


def start_background_sweeper() -> Sweeper:
    """Run the sweeper loop in a daemon thread of this process (the run command's default)."""
    global _background
    if _background is None:
        _background = Sweeper(settings.SWITCHBOARD_SWEEP_INTERVAL_SECONDS)
        threading.Thread(target=_background.run, name="sweeper", daemon=True).start()
    return _background
