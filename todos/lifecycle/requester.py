"""The A2A states, between a todo's holder and whoever asked for the work.

The holder ``interrupt``s its claim to ask for input (or authorization): the todo waits on a
human (``states.AWAITING_INPUT_STATES``), its lease held, never reaped. One word each:

- **resume** is the transition back (resume.sql: claimed again, the lease restarts), and
  ``resume()`` is the owning human making it from the Board, with or without a response;
- **answer** is a response to the holder's request: ``answer()`` is the endpoint's A2A
  requester resuming the claim with one. The holder reads it under ``input_request.response``.

The holder may also ``reject`` the task for good.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from attempts import rules
from switchboard.lib.actors import Actor
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
from todos.lifecycle.statements import (
    INTERRUPT,
    REJECT,
    RESUME_BY_HUMAN,
    RESUME_BY_REQUESTER,
    RETRY_BY_REQUESTER,
)
from todos.states import AWAITING_INPUT_STATES
from todos.types import ReportResult, TodoView

# What interrupt may move a claim to.
INTERRUPT_STATES = tuple(str(state) for state in AWAITING_INPUT_STATES)


def interrupt(
    endpoint_id: UUID,
    todo_id: str,
    *,
    owner: str,
    state: str,
    input_request: Any = None,
    lease_token: str | None = None,
) -> ReportResult:
    """Hold the holder's claim while it waits on input (or authorization) from a human: its
    lease stops running and it is never reaped meanwhile, until ``resume`` or ``answer``."""
    if state not in INTERRUPT_STATES:
        raise InvalidInput("state", f"must be one of {', '.join(INTERRUPT_STATES)}")
    params = {
        **holder_params(endpoint_id, owner, lease_token),
        "to_state": state,
        "input_request": jsonb("input_request", input_request),
        **by_endpoint(Actor.endpoint(endpoint_id), "interrupt"),
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
    """Resume an interrupted todo as its owning human: claimed again, the holder's lease
    restarts; ``response``, when given, is the human's answer.

    ``actor_id`` is who pressed resume when it is not ``human_id`` (staff in the admin).
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
    lease_ttl_seconds: int | None = None,
) -> ReportResult:
    """Answer an interrupted todo as the endpoint's A2A requester: the same resume as
    ``resume``'s, in the endpoint's scope and always with a response, which the holder reads
    under ``input_request.response``. Recorded as an ``a2a_state`` row of the endpoint's
    requester (``Actor.requester``)."""
    params = {
        "response": jsonb("response", response),
        "ttl_seconds": lease_ttl(lease_ttl_seconds),
        **by_endpoint(Actor.requester(endpoint_id), "resume"),
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
        **by_endpoint(Actor.endpoint(endpoint_id), "reject", summary),
    }
    row = run_single("reject", REJECT, params, Scope.of_endpoint(endpoint_id), todo_id)
    counted("reject", ("failed", "dead_lettered"), activity="a2a_state")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def requester_retry(endpoint_id: UUID, todo_id: str) -> ReportResult:
    """The Board's retry (operator.retry: a failed, canceled or rejected todo back to pending
    with a fresh budget), made by the endpoint's requester in the endpoint's scope: MCP's App
    offers it to the person who submitted the todo. Recorded as an ``a2a_state`` row of the
    endpoint's requester (``Actor.requester``)."""
    params = by_endpoint(Actor.requester(endpoint_id), "retry")
    row = run_single("retry", RETRY_BY_REQUESTER, params, Scope.of_endpoint(endpoint_id), todo_id)
    counted("retry", activity="a2a_state")
    return ReportResult(TodoView.from_row(row), None)
