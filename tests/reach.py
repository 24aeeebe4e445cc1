"""Reach a todo's states the way the product does: through the lifecycle's transitions.

Each helper returns what its last transition returned (callers that want the id read
``.todo.id``). The only SQL here moves a row's clock: ``lease_expires_at``, ``next_retry_at``,
``created_at`` and ``finished_at``. PostgreSQL's ``now()`` does not follow Python's clock, and
under a plain ``django_db`` test it is one instant for the whole transaction, so a lease is
expired or a retry made due by moving the row, never the clock.

The defaults are the lifecycle tests' agent and queue; other tests pass their own (the Board's
and the admin's agent is ``BOT``, on the queue ``"work"``).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from switchboard.lib.sql import fetch_all
from todos import lifecycle
from todos.types import ClaimResult, FailResult, ReportResult, TodoView

OWNER = "worker-1"
QUEUE = "default"
BOT = "bot-1"
DAY = 86400  # seconds, for the ``seconds_ago`` of the clock movers


def new_todo(
    endpoint_id: UUID, queue: str = QUEUE, *, title: str = "a task", **create: Any
) -> TodoView:
    """A pending todo; ``create`` takes ``lifecycle.create``'s other arguments."""
    return lifecycle.create(endpoint_id, queue=queue, title=title, **create)


def claimed(
    endpoint_id: UUID,
    queue: str = QUEUE,
    *,
    owner: str = OWNER,
    lease_ttl_seconds: int | None = None,
    claimant: str | None = None,
    session: str | None = None,
    require_fence: bool = False,
    **create: Any,
) -> ClaimResult:
    """A fresh todo, claimed by id by ``owner``; ``create`` goes to ``new_todo``."""
    todo = new_todo(endpoint_id, queue, **create)
    return lifecycle.claim(
        endpoint_id,
        todo.id,
        owner=owner,
        lease_ttl_seconds=lease_ttl_seconds,
        claimant=claimant,
        session=session,
        require_fence=require_fence,
    )


def reclaim(endpoint_id: UUID, todo_id: str, *, owner: str = OWNER, **claim: Any) -> ClaimResult:
    """Claim an existing todo again by id (after a release, a reap, a lapsed lease)."""
    return lifecycle.claim(endpoint_id, todo_id, owner=owner, **claim)


def claimed_and_released(
    endpoint_id: UUID,
    todo_id: str,
    times: int,
    *,
    owner: str = OWNER,
    summary: str | None = None,
) -> ReportResult | None:
    """Claim the pending todo and release it, ``times`` over: that many closed attempts."""
    released = None
    for _ in range(times):
        lifecycle.claim(endpoint_id, todo_id, owner=owner)
        released = lifecycle.release(endpoint_id, todo_id, owner=owner, summary=summary)
    return released


def lapsed(
    endpoint_id: UUID, queue: str = QUEUE, *, owner: str = OWNER, **claim_and_create: Any
) -> ClaimResult:
    """A todo claimed by ``owner`` whose lease has lapsed: its attempt is still open."""
    result = claimed(endpoint_id, queue, owner=owner, **claim_and_create)
    assert expire_lease(result.todo.id, attempt=result.attempt_seq) == 1
    return result


def died_then_failed(
    endpoint_id: UUID, queue: str = QUEUE, *, owner: str = OWNER, max_attempts: int = 5
) -> FailResult:
    """A todo whose first attempt died (its lease lapsed, the reaper requeued it) and whose
    second its holder failed, retryably: one closed attempt of each kind."""
    first = claimed(
        endpoint_id, queue, owner=owner, claimant="harness/run-1", max_attempts=max_attempts
    )
    todo_id = first.todo.id
    expire_lease(todo_id)
    assert todo_id in lifecycle.reap().requeued
    reclaim(endpoint_id, todo_id, owner=owner, claimant="harness/run-2")
    return lifecycle.fail(
        endpoint_id, todo_id, owner=owner, summary="the build is red", retryable=True
    )


# --- the clock ----------------------------------------------------------------------------------


def expire_lease(todo_id: str, *, attempt: int | None = None) -> int:
    """Make the todo's lease lapse (a second ago), as if its holder had died; rows changed.

    With ``attempt``, only while that attempt is still the todo's live claim (a race may have
    closed it already): 0 then.
    """
    if attempt is None:
        rows = fetch_all(
            "UPDATE todos SET lease_expires_at = now() - interval '1 second'"
            " WHERE id = %(id)s RETURNING id",
            {"id": todo_id},
        )
    else:
        rows = fetch_all(
            "UPDATE todos SET lease_expires_at = now() - interval '1 second'"
            " WHERE id = %(id)s AND state = 'claimed' AND attempts_total = %(seq)s RETURNING id",
            {"id": todo_id, "seq": attempt},
        )
    return len(rows)


def make_retry_due(todo_id: str) -> None:
    """Bring a scheduled retry's time to a second ago."""
    rows = fetch_all(
        "UPDATE todos SET next_retry_at = now() - interval '1 second'"
        " WHERE id = %(id)s AND next_retry_at IS NOT NULL RETURNING id",
        {"id": todo_id},
    )
    assert rows, f"todo {todo_id} has no retry scheduled"


def set_created_at(todo_id: str, seconds_ago: float) -> None:
    fetch_all(
        "UPDATE todos SET created_at = now() - %(s)s * interval '1 second' WHERE id = %(id)s",
        {"id": todo_id, "s": seconds_ago},
    )


def set_finished_at(todo_id: str, seconds_ago: float) -> None:
    """Move a finished todo's ``finished_at`` back (retention counts from it)."""
    rows = fetch_all(
        "UPDATE todos SET finished_at = now() - %(s)s * interval '1 second'"
        " WHERE id = %(id)s AND finished_at IS NOT NULL RETURNING id",
        {"id": todo_id, "s": seconds_ago},
    )
    assert rows, f"todo {todo_id} is not finished"
