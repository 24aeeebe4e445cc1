"""The A2A states, between a todo's holder and whoever asked for the work.

The holder ``interrupt``s its claim to ask for input (or authorization): the todo waits on a
human (``states.AWAITING_INPUT_STATES``) and its lease is held, never reaped. An answer
resumes the claim (resume.sql: the lease restarts and the holder reads the answer under
``input_request.response``): ``resume`` is the owning human's answer from the Board, ``answer``
the endpoint's A2A requester's. Both words name the same transition; ``resume`` is the one a
human makes. The holder may also ``reject`` the task for good.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from attempts import rules
from switchboard.lib.errors import InvalidInput
from switchboard.scope import Scope
from todos.lifecycle.core import (
    by_endpoint,
    by_human,
    counted,
    holder_params,
    jsonb,
    lease_ttl,
    run_single,
)
from todos.lifecycle.statements import INTERRUPT, REJECT, RESUME_BY_HUMAN, RESUME_BY_REQUESTER
from todos.states import PAUSED_STATES
from todos.types import ReportResult, TodoView

INTERRUPT_STATES = tuple(str(state) for state in PAUSED_STATES)  # what interrupt may move to


def interrupt(
    endpoint_id: UUID,
    todo_id: str,
    *,
    owner: str,
    state: str,
    input_request: Any = None,
    lease_token: str | None = None,
) -> ReportResult:
    """Pause the holder's claim awaiting input (or authorization); it is never reaped meanwhile."""
    if state not in INTERRUPT_STATES:
        raise InvalidInput("state", f"must be one of {', '.join(INTERRUPT_STATES)}")
    params = {
        **holder_params(endpoint_id, owner, lease_token),
        "to_state": state,
        "input_request": jsonb("input_request", input_request),
        **by_endpoint(owner, "interrupt"),
    }
    row = run_single("interrupt", INTERRUPT, params, Scope.of_endpoint(endpoint_id), todo_id)
    counted("interrupt", activity="a2a_state")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def resume(
    human_id: int,
    todo_id: str,
    *,
    response: Any = None,
    lease_ttl_seconds: int | None = None,
    actor_id: int | None = None,
) -> ReportResult:
    """The owning human answers an interrupted todo; the holder's lease restarts.

    ``actor_id`` is who answered when it is not ``human_id`` (staff in the admin).
    """
    params = {
        "response": jsonb("response", response),
        "ttl_seconds": lease_ttl(lease_ttl_seconds),
        **by_human(actor_id or human_id, "resume"),
    }
    row = run_single("resume", RESUME_BY_HUMAN, params, Scope.of_human(human_id), todo_id)
    counted("resume", activity="human_action")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def answer(
    endpoint_id: UUID,
    todo_id: str,
    *,
    response: Any,
    requester: str,
    lease_ttl_seconds: int | None = None,
) -> ReportResult:
    """The endpoint's A2A requester answers its interrupted todo (``resume`` in the endpoint's
    scope); the holder's lease restarts and it reads the answer under
    ``input_request.response``. Recorded as an ``a2a_state`` row of ``requester``."""
    params = {
        "response": jsonb("response", response),
        "ttl_seconds": lease_ttl(lease_ttl_seconds),
        **by_endpoint(requester, "resume"),
    }
    scope = Scope.of_endpoint(endpoint_id)
    row = run_single("resume", RESUME_BY_REQUESTER, params, scope, todo_id)
    counted("resume", activity="a2a_state")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def reject(
    endpoint_id: UUID,
    todo_id: str,
    *,
    owner: str,
    result: Any = None,
    summary: str | None = None,
    lease_token: str | None = None,
) -> ReportResult:
    """The holder refuses the task for good; its attempt closes failed/dead_lettered."""
    text, truncated = rules.summary(summary)
    params = {
        **holder_params(endpoint_id, owner, lease_token),
        "result": jsonb("result", result),
        "summary": text,
        "summary_truncated": truncated,
        **by_endpoint(owner, "reject", summary),
    }
    row = run_single("reject", REJECT, params, Scope.of_endpoint(endpoint_id), todo_id)
    counted("reject", ("failed", "dead_lettered"), activity="a2a_state")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])
