"""The humans' transitions (the Board, the admin, commands): retry, cancel, forget, revoking an
endpoint, and the operator variants of the agent's transitions, checked by "the human owns the
endpoint" instead of "the caller holds the lease" and never fenced. Each records a
``human_action`` activity row in the same statement; ``cancel`` serves A2A's requester too."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from django.db import transaction

from attempts import rules
from switchboard.lib import metrics
from switchboard.lib.actors import Actor
from switchboard.lib.errors import InvalidInput
from switchboard.lib.sql import fetch_one
from switchboard.scope import Scope
from todos.lifecycle.core import (
    activity_params,
    by_human,
    claim_params,
    claimed_result,
    counted,
    extend_ttl,
    fail_params,
    fail_result,
    release_closes,
    report_params,
    run,
    run_single,
)
from todos.lifecycle.statements import (
    CANCEL_BY_HUMAN,
    CANCEL_BY_REQUESTER,
    FORGET,
    OPERATOR_CLAIM,
    OPERATOR_COMPLETE,
    OPERATOR_EXTEND,
    OPERATOR_FAIL,
    OPERATOR_RELEASE,
    RETRY,
    REVOKE_ENDPOINT,
    REVOKED_SWEEP,
)
from todos.limits import BULK_MAX
from todos.types import ClaimResult, FailResult, ReportResult, RevokeResult, TodoView


def retry(
    human_id: int, todo_id: str, *, actor_id: int | None = None, by_system: bool = False
) -> ReportResult:
    """Send a failed, canceled or rejected todo back to pending with a fresh budget.

    ``actor_id`` is who pressed retry when it is not ``human_id`` (staff in the admin); with
    ``by_system`` it is the system's (``manage.py todos retry`` without ``--as``, in the scope of
    the todo's owner), as ``cancel``'s is.
    """
    if by_system:
        params = activity_params("human_action", Actor.command("retry"), "retry")
    else:
        params = by_human(actor_id or human_id, "retry")
    row = run_single("retry", RETRY, params, Scope.of_human(human_id), todo_id)
    counted("retry", activity="human_action")
    return ReportResult(TodoView.from_row(row), None)


def forget(
    human_id: int,
    todo_ids: Sequence[str],
    *,
    actor_id: int | None = None,
    by_system: bool = False,
) -> tuple[str, ...]:
    """Erase what the human's finished todos among ``todo_ids`` held, leaving each a tombstone
    (forget.sql; what goes and what stays: _forget_arms.sql); the ids forgotten, in id order.
    Todos unfinished, foreign, unknown or already forgotten are left alone (not an error: the
    caller compares). Recorded as ``cancel``'s are: a ``human_action`` of ``actor_id`` (default
    ``human_id``), or of the system when ``by_system`` (``manage.py forget`` without ``--as``).
    Spans are not this writer's: ``activity/forget.py`` deletes them in the same transaction and
    is what the surfaces call."""
    if len(todo_ids) > BULK_MAX:
        raise InvalidInput("ids", f"at most {BULK_MAX} at once")
    actor = Actor.command("forget") if by_system else Actor.human(actor_id or human_id)
    params = {
        "ids": list(todo_ids),
        **activity_params("human_action", actor, "forget"),
        **Scope.of_human(human_id).params,
    }
    rows = run(FORGET, params, None)
    if rows:
        counted("forget", n=len(rows), activity="human_action")
    return tuple(r["id"] for r in rows)


def cancel(
    scope: Scope,
    todo_id: str,
    *,
    reason: str | None = None,
    actor_id: int | None = None,
    by_system: bool = False,
) -> ReportResult:
    """Cancel an unfinished todo (a human from the Board, or the endpoint over A2A).

    A human's cancel is recorded as a ``human_action`` of ``actor_id`` (default: the scope's
    human), or of the system (``manage.py``) when ``by_system`` (``manage.py cancel`` without
    ``--as``: the scope is then the owner's, and no operator is named); an endpoint's as an
    ``a2a_state`` change. The holder, if any, learns it at its next call (``TodoEnded``).
    """
    text, truncated = rules.summary(reason)
    params = {"summary": text, "summary_truncated": truncated}
    if scope.endpoint_id is not None:
        params |= activity_params(
            "a2a_state",
            Actor.requester(scope.endpoint_id),
            "cancel",
            message=reason,
            message_field="reason",
        )
        kind = "a2a_state"
    else:
        assert scope.human_id is not None
        params |= activity_params(
            "human_action",
            Actor.command("cancel") if by_system else Actor.human(actor_id or scope.human_id),
            "cancel",
            message=reason,
            message_field="reason",
        )
        kind = "human_action"
    row = run_single(
        "cancel",
        CANCEL_BY_REQUESTER if scope.is_endpoint else CANCEL_BY_HUMAN,
        params,
        scope,
        todo_id,
        # A requester cancels right after submitting, as the agent claims (MCP Tasks, A2A).
        again_on_miss=True,
    )
    closes = ("canceled", "canceled") if row["attempt_seq"] is not None else None
    counted("cancel", closes, activity=kind)
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def revoke_endpoint(human_id: int, endpoint_id: UUID) -> RevokeResult:
    """Revoke an endpoint its human owns; dead-letter its unfinished todos.

    Revoking an endpoint already revoked, or one the human does not own, changes nothing and
    returns ``endpoint_revoked=False``.
    """
    params = {"endpoint_id": endpoint_id, "scope_human_id": human_id}
    row = fetch_one(REVOKE_ENDPOINT, params)
    assert row is not None  # the statement always returns one row
    dead = tuple(row["dead_lettered"])
    # Count the attempts the statement closed, not the todos it dead-lettered: a pending todo
    # is dead-lettered too but has no open attempt, and counting it overstated the metric.
    closed = int(row["attempts_closed"])
    if row["revoked"]:
        # A claim that committed while the revoke waited on its todo's row took a todo the
        # revoke could not dead-letter (its snapshot missed the claim's attempt): once more,
        # with a fresh snapshot, for what the revoked endpoint still holds.
        swept = fetch_one(REVOKED_SWEEP, params)
        assert swept is not None
        dead = tuple(sorted((*dead, *swept["dead_lettered"])))
        closed += int(swept["attempts_closed"])
        counted("revoke_endpoint")
        if closed:
            transaction.on_commit(
                lambda: metrics.attempt_closed("revoked", "dead_lettered", closed)
            )
    return RevokeResult(bool(row["revoked"]), dead)


def operator_claim(
    human_id: int,
    todo_id: str,
    *,
    lease_ttl_seconds: int | None = None,
    claimant: str | None = None,
    actor_id: int | None = None,
    trace_id: bytes | None = None,
) -> ClaimResult:
    """The owning human claims a todo from the Board (claimer_kind 'owner', never fenced).

    Every operator function records a ``human_action`` of ``actor_id`` (default ``human_id``;
    staff acting in the admin pass themselves), in the same statement as the transition.
    """
    params, _ = claim_params(
        owner=str(Actor.human(human_id)),
        lease_ttl_seconds=lease_ttl_seconds,
        claimant=claimant,
        session=None,
        require_fence=False,
        claimer_kind="owner",
        claimer_endpoint_id=None,
        trace_id=trace_id,
    )
    params |= by_human(actor_id or human_id, "claim")
    row = run_single("operator_claim", OPERATOR_CLAIM, params, Scope.of_human(human_id), todo_id)
    return claimed_result(row, None, "operator_claim", activity="human_action")


def operator_extend(
    human_id: int,
    todo_id: str,
    *,
    lease_ttl_seconds: int | None = None,
    actor_id: int | None = None,
) -> ReportResult:
    """Extend the lease of a claimed todo, whoever holds it (by the TTL its claim chose when
    ``lease_ttl_seconds`` is None)."""
    params = {
        **extend_ttl(lease_ttl_seconds),
        **by_human(actor_id or human_id, "extend"),
    }
    row = run_single("operator_extend", OPERATOR_EXTEND, params, Scope.of_human(human_id), todo_id)
    counted("operator_extend", activity="human_action")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def operator_complete(
    human_id: int,
    todo_id: str,
    *,
    result: Any = None,
    summary: str | None = None,
    artifact: str | None = None,
    actor_id: int | None = None,
) -> ReportResult:
    """Complete a claimed todo, whoever holds it."""
    params = {
        **report_params(result, summary, artifact),
        **by_human(actor_id or human_id, "complete", summary),
    }
    row = run_single(
        "operator_complete", OPERATOR_COMPLETE, params, Scope.of_human(human_id), todo_id
    )
    counted("operator_complete", ("completed", "done"), activity="human_action")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def operator_fail(
    human_id: int,
    todo_id: str,
    *,
    result: Any = None,
    summary: str | None = None,
    artifact: str | None = None,
    retryable: bool = True,
    retry_after_seconds: int | None = None,
    actor_id: int | None = None,
) -> FailResult:
    """Fail a claimed todo, whoever holds it."""
    params = {
        **report_params(result, summary, artifact),
        **fail_params(retryable, retry_after_seconds),
        **by_human(actor_id or human_id, "fail", summary),
    }
    row = run_single("operator_fail", OPERATOR_FAIL, params, Scope.of_human(human_id), todo_id)
    return fail_result(row, "operator_fail", activity="human_action")


def operator_release(
    human_id: int, todo_id: str, *, summary: str | None = None, actor_id: int | None = None
) -> ReportResult:
    """Put a claimed todo back on its queue, whoever holds it (the last allowed attempt
    dead-letters it, as the holder's release does)."""
    text, truncated = rules.summary(summary)
    params = {
        "summary": text,
        "summary_truncated": truncated,
        **by_human(actor_id or human_id, "release", summary),
    }
    row = run_single(
        "operator_release", OPERATOR_RELEASE, params, Scope.of_human(human_id), todo_id
    )
    counted("operator_release", release_closes(row), activity="human_action")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def operator_retry(human_id: int, todo_id: str, *, actor_id: int | None = None) -> ReportResult:
    return retry(human_id, todo_id, actor_id=actor_id)


def operator_cancel(
    human_id: int, todo_id: str, *, reason: str | None = None, actor_id: int | None = None
) -> ReportResult:
    return cancel(Scope.of_human(human_id), todo_id, reason=reason, actor_id=actor_id)
