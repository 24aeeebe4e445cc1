"""The JSON shapes tools and resources return, built from lifecycle values or models.

``todo_out`` omits ``result`` (no read but get_todo returns it, so results never leak
to clients that did not ask); attempt rows omit the claimer's session, owner and endpoint id,
which identify callers, not work.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from activity.trail import Note, Progress
from attempts.types import AttemptView, Usage
from todos import states
from todos.models import Todo
from todos.queries import QueueSummary, TodoDetail
from todos.types import ClaimResult, QueueEmpty, TodoView


def iso(value: dt.datetime | None) -> str | None:
    """RFC 3339 in UTC with a ``Z``, microseconds kept (keyset cursors depend on them)."""
    if value is None:
        return None
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def todo_out(todo: TodoView | Todo, *, detail: bool = True, result: bool = False) -> dict[str, Any]:
    """A todo for an agent. ``detail`` adds payload and work order; ``result`` the result."""
    out: dict[str, Any] = {
        "id": todo.id,
        "queue": todo.queue,
        "title": todo.title,
        "state": todo.state,
        "assignee": todo.assignee,
        "owner": todo.owner,
        "attempt": todo.attempt,
        "max_attempts": todo.max_attempts,
        "attempts_total": todo.attempts_total,
        "lease_expires_at": iso(todo.lease_expires_at),
        "claimed_at": iso(todo.claimed_at),
        "next_retry_at": iso(todo.next_retry_at),
        "dead_letter": todo.dead_letter,
        "created_at": iso(todo.created_at),
        "updated_at": iso(todo.updated_at),
        "finished_at": iso(todo.finished_at),
        "priority": todo.priority,
        "not_before": iso(todo.not_before),
        "start_by": iso(todo.start_by),
        "finish_by": iso(todo.finish_by),
        "run_timeout_seconds": todo.run_timeout_seconds,
        "run_deadline": iso(states.run_deadline(todo)),
        "dedupe_key": todo.dedupe_key,
    }
    if detail:
        out["payload"] = todo.payload
        out["work_order"] = todo.work_order
        out["input_request"] = todo.input_request
    if result:
        out["result"] = todo.result
    return out


def attempt_out(attempt: AttemptView) -> dict[str, Any]:
    return {
        "seq": attempt.seq,
        "attempt": attempt.attempt,
        "claimer_kind": attempt.claimer_kind,
        "claimant": attempt.claimant,
        "claimed_at": iso(attempt.claimed_at),
        "last_heartbeat_at": iso(attempt.last_heartbeat_at),
        "lease_expires_at": iso(attempt.lease_expires_at),
        "ended_at": iso(attempt.ended_at),
        "outcome": attempt.outcome,
        "disposition": attempt.disposition,
        "died": attempt.died,
        "summary": attempt.summary,
        "summary_truncated": attempt.summary_truncated,
        "artifact": attempt.artifact,
        "notes_dropped": attempt.notes_dropped,
        "trace_id": attempt.trace_id,
        "spans_dropped": attempt.spans_dropped,
        "usage": attempt.usage.as_json(),
    }


def detail_out(detail: TodoDetail, progress: Progress) -> dict[str, Any]:
    """get_todo and the ``switchboard://todos/{id}`` resource: the todo with its result and
    usage, its attempts newest first, its holders' newest progress notes and its spans counted
    (what the MCP App shows as it follows the todo, mcp_server/app.py)."""
    todo = todo_out(detail.todo, result=True)
    todo["usage"] = _usage(detail.todo).as_json()
    todo["max_cost_usd"] = _cap(detail.todo)
    return {
        "todo": todo,
        "attempts": [attempt_out(a) for a in detail.history.attempts],
        "attempts_total": detail.history.total,
        "attempts_pruned": detail.history.pruned,
        "notes": [note_out(n) for n in progress.notes],
        "spans": {"count": progress.spans, "errors": progress.span_errors},
    }


def note_out(note: Note) -> dict[str, Any]:
    return {
        "attempt_seq": note.attempt_seq,
        "at": iso(note.at),
        "text": note.text,
        "truncated": note.truncated,
    }


def _usage(todo: TodoView | Todo) -> Usage:
    return todo.usage if isinstance(todo, TodoView) else Usage.from_row(todo)


def _cap(todo: TodoView | Todo) -> float | None:
    return None if todo.max_cost_usd is None else float(todo.max_cost_usd)


def queue_out(summary: QueueSummary, uri: str) -> dict[str, Any]:
    """The ``switchboard://queues/{queue}`` resource."""
    return {
        "uri": uri,
        "queue": summary.queue,
        "claimable": summary.claimable,
        "oldest_pending_at": iso(summary.oldest_pending_at),
        "counts": summary.counts,
    }


def claim_out(claimed: ClaimResult, traceparent: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "empty": False,
        "todo": todo_out(claimed.todo),
        "attempt_seq": claimed.attempt_seq,
        "attempts_total": claimed.attempts_total,
        "prior_attempts": [attempt_out(a) for a in claimed.prior_attempts],
    }
    if claimed.lease_token is not None:
        out["lease_token"] = claimed.lease_token
    if traceparent is not None:
        out["traceparent"] = traceparent
    return out


def empty_out(reasons: Sequence[QueueEmpty]) -> dict[str, Any]:
    """claim_next's answer when it took nothing: why, queue by queue (``queues``), and, as
    before, the paused ones by name (``paused_queues``, only when there are some)."""
    out: dict[str, Any] = {"empty": True}
    paused = [r.queue for r in reasons if r.reason == "paused"]
    if paused:
        out["paused_queues"] = paused
    queues = []
    for r in reasons:
        item: dict[str, Any] = {"queue": r.queue, "reason": r.reason}
        if r.paused_by is not None:
            item["paused_by"] = r.paused_by
        if r.at is not None:
            item["retry_at"] = iso(r.at)
        if r.max_in_flight is not None:
            item["in_flight"], item["max_in_flight"] = r.in_flight, r.max_in_flight
        queues.append(item)
    out["queues"] = queues
    return out


def report_out(todo: TodoView, attempt_seq: int | None) -> dict[str, Any]:
    """heartbeat, complete, fail, release: the todo (flat, ``todo_out`` plus) and seq."""
    return {**todo_out(todo), "attempt_seq": attempt_seq}
