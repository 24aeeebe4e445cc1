"""The sweeper's transitions (todos/sweeps.py runs them): dead-letter the todos whose deadline
passed, reap lapsed leases, requeue due retries, and ring, gated per todo across every process
(docs/decisions/0015-rings-never-lost.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from uuid import uuid4

from django.db import transaction

from switchboard import runtime_settings
from switchboard.lib import metrics
from switchboard.lib.actors import Actor
from switchboard.lib.sql import fetch_all, fetch_one
from todos.lifecycle.core import activity_params, counted, run
from todos.lifecycle.statements import (
    DEADLINES,
    OVER_CAP,
    REAP,
    REQUEUE_DUE_RETRIES,
    RING,
    RING_DUE,
)
from todos.limits import SWEEP_BATCH
from todos.states import IN_FLIGHT_STATES
from todos.types import RingResult, SweepResult


def reap(limit: int = SWEEP_BATCH) -> SweepResult:
    """Reap up to ``limit`` lapsed leases: requeue them, or dead-letter those out of budget. A
    lease that lapsed at its run timeout closes ``timed_out`` and is retried as a failure is
    (after the backoff, budget permitting: ``retry_scheduled``), else dead-lettered."""
    current = runtime_settings.current()
    params = {
        "limit": limit,
        "retry_after_seconds": None,
        "retry_base_seconds": current.retry_base_seconds,
        "retry_max_seconds": current.retry_max_seconds,
    }
    rows = run(REAP, params, None)
    requeued = tuple(r["id"] for r in rows if r["state"] == "pending")
    retried = tuple(r["id"] for r in rows if r["state"] == "failed" and r["next_retry_at"])
    dead = tuple(r["id"] for r in rows if r["state"] == "failed" and not r["next_retry_at"])
    closes = Counter(("timed_out" if r["timed_out"] else "reaped", _disposition(r)) for r in rows)

    def count() -> None:
        for name, ids in (
            ("requeued", requeued),
            ("retry_scheduled", retried),
            ("dead_lettered", dead),
        ):
            if ids:
                metrics.transition("reap", name, len(ids))
        for (outcome, disposition), n in closes.items():
            metrics.attempt_closed(outcome, disposition, n)

    transaction.on_commit(count)
    return SweepResult(requeued=requeued, dead_lettered=dead, retry_scheduled=retried)


def _disposition(row: dict[str, object]) -> str:
    if row["state"] == "pending":
        return "requeued"
    return "retry_scheduled" if row["next_retry_at"] else "dead_lettered"


def dead_letter_late(limit: int = SWEEP_BATCH) -> tuple[str, ...]:
    """Dead-letter up to ``limit`` todos whose time ran out (deadlines.sql): unfinished past
    their finish_by (an open attempt closes ``timed_out``), or still pending past their
    start_by. Each gets a ``deadline`` activity row of the sweeper naming the deadline."""
    rows = run(DEADLINES, {"limit": limit}, None)
    ids = tuple(r["id"] for r in rows)
    held = sum(1 for r in rows if r["from_state"] in IN_FLIGHT_STATES)

    def count() -> None:
        metrics.transition("deadline", "dead_lettered", len(ids))
        if held:
            metrics.attempt_closed("timed_out", "dead_lettered", held)
        metrics.activity("deadline", len(ids))

    if ids:
        transaction.on_commit(count)
    return ids


def end_over_cap(ids: Sequence[str] | None = None, limit: int = SWEEP_BATCH) -> tuple[str, ...]:
    """Dead-letter, without retry, up to ``limit`` unfinished todos whose cost reached their
    ``max_cost_usd`` (over_cap.sql): ``ids`` (the OTLP ingest's, for the todos its batch took
    past their cap), or every capped todo (None: the sweeper's pass). An open attempt closes
    ``budget_exceeded``, so its holder's next heartbeat or report raises ``TodoEnded`` with that
    code; a ``budget`` activity row of the sweeper records it."""
    rows = run(OVER_CAP, {"ids": None if ids is None else list(ids), "limit": limit}, None)
    found = tuple(r["id"] for r in rows)
    held = sum(1 for r in rows if r["from_state"] in IN_FLIGHT_STATES)

    def count() -> None:
        metrics.transition("over_cap", "dead_lettered", len(found))
        if held:
            metrics.attempt_closed("budget_exceeded", "dead_lettered", held)
        metrics.activity("budget", len(found))

    if found:
        transaction.on_commit(count)
    return found


def requeue_due_retries(limit: int = SWEEP_BATCH) -> tuple[str, ...]:
    """Move up to ``limit`` failed todos whose retry is due back to pending; return their ids.

    Each requeue is recorded as a ``retried`` activity row of the system.
    """
    params = {"limit": limit, **activity_params("retried", Actor.sweeper(), "requeue")}
    rows = fetch_all(REQUEUE_DUE_RETRIES, params)
    ids = tuple(r["id"] for r in rows)
    if ids:
        counted("requeue_due_retries", n=len(ids), activity="retried")
    return ids


def ring(
    todo_id: str, *, reason: str, ringer: Actor, subscribers: int | None = None
) -> RingResult | None:
    """Ring a pending todo if the shared gate is open (``ring.sql``); None when not rung.

    The gate is the todo's ``last_ringed_at``: at most one ring per todo per
    ``ring_gate_seconds`` across every process. A ring writes ``last_ringed_at``,
    ``ring_attempts``, a ``rung`` activity row and (for an endpoint with a push URL) a queued
    push, and notifies ``todo_rung`` at commit, which every process's doorbell hands to its own
    open MCP streams. Never waits: a todo locked by a claim in progress is not rung. A ring the
    gate refuses is owed, and ``ring_due`` rings it when the gate opens.
    """
    current = runtime_settings.current()
    row = fetch_one(
        RING,
        {
            "id": todo_id,
            "gate_seconds": current.ring_gate_seconds,
            "ring_id": uuid4(),
            "reason": reason,
            "ringer": str(ringer),
            "subscribers": subscribers,
            "activity_cap": current.activity_max_per_todo,
        },
    )
    if row is None:
        return None
    transaction.on_commit(lambda: metrics.activity("rung"))
    return RingResult(row["id"], row["endpoint_id"], row["queue"], reason, row["ring_attempts"])


def ring_due(scan: str, limit: int = SWEEP_BATCH) -> list[RingResult]:
    """Ring up to ``limit`` pending todos that ``scan`` finds due a ring (``ring_due.sql``); each
    writes what ``ring`` writes, with ``scan`` as its reason.

    ``gate``: a ring the gate held back, now that it is open. ``push``: a first ring for a push
    endpoint's todo nobody's stream rang. ``unclaimed``: a re-ring of a todo left unclaimed
    ``ring_unclaimed_after_seconds``, with backoff, at most ``ring_unclaimed_max_attempts``
    rings in all.
    """
    current = runtime_settings.current()
    rows = fetch_all(
        RING_DUE[scan],
        {
            "gate_seconds": current.ring_gate_seconds,
            "unclaimed_seconds": current.ring_unclaimed_after_seconds,
            "max_rings": current.ring_unclaimed_max_attempts,
            "limit": limit,
            "reason": scan,
            "ringer": str(Actor.sweeper()),
            "subscribers": None,
            "activity_cap": current.activity_max_per_todo,
        },
    )
    if rows:
        n = len(rows)
        transaction.on_commit(lambda: metrics.activity("rung", n))
    return [
        RingResult(r["id"], r["endpoint_id"], r["queue"], r["reason"], r["ring_attempts"])
        for r in rows
    ]
