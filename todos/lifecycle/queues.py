"""A queue's pause and resume, the only writer of ``queue_pauses``
(docs/decisions/0020-queue-pause-and-bulk-actions.md).

A queue pause stops the agents' claims and the rings of one endpoint's queue. It is not the
A2A interrupt, which holds one todo's lease while it waits on a human (``requester.py``)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from switchboard.lib.actors import Actor
from switchboard.lib.errors import InvalidInput
from switchboard.lib.sql import fetch_one
from todos.lifecycle.core import actor_params
from todos.lifecycle.statements import (
    PAUSE_QUEUE_BY_HUMAN,
    PAUSE_QUEUE_BY_SYSTEM,
    RESUME_QUEUE_BY_HUMAN,
    RESUME_QUEUE_BY_SYSTEM,
)
from todos.limits import check_name
from todos.types import QueueChange


def _queue_params(
    endpoint_id: UUID, queue: str, human_id: int | None, actor_id: int | None
) -> dict[str, Any]:
    params: dict[str, Any] = {"endpoint_id": endpoint_id, "queue": check_name("queue", queue)}
    if human_id is None:
        # No human: the command run on the server (manage.py queue without --as).
        return params | actor_params(Actor.command("queue"))
    return params | actor_params(Actor.human(actor_id or human_id)) | {"scope_human_id": human_id}


def pause_queue(
    endpoint_id: UUID, queue: str, *, human_id: int | None, actor_id: int | None = None
) -> QueueChange:
    """Pause an endpoint's queue: no agent's claim takes its todos (claim_next skips it, a claim
    by id is refused) and no ring goes out for them until it is resumed. Leases already held
    run on. Pausing a paused queue changes nothing (``changed`` False).

    ``human_id`` is the owning human (their own endpoints only: another's reads as unknown),
    recorded as the pause's actor (``actor_id`` when staff act for them); None is the system.
    Raises ``InvalidInput`` for an endpoint unknown in that scope.
    """
    params = _queue_params(endpoint_id, queue, human_id, actor_id)
    row = fetch_one(PAUSE_QUEUE_BY_SYSTEM if human_id is None else PAUSE_QUEUE_BY_HUMAN, params)
    assert row is not None  # the statement always returns one row
    if not row["found"]:
        raise InvalidInput("endpoint", "unknown")
    return QueueChange(endpoint_id, queue, paused=True, changed=bool(row["paused"]))


def resume_queue(
    endpoint_id: UUID, queue: str, *, human_id: int | None, actor_id: int | None = None
) -> QueueChange:
    """Resume a paused queue: its todos are claimable again, and the claimers waiting on it
    are rung at commit (once for the queue). Resuming a queue not paused changes nothing.
    ``human_id`` and ``actor_id`` as ``pause_queue``'s."""
    params = _queue_params(endpoint_id, queue, human_id, actor_id)
    row = fetch_one(RESUME_QUEUE_BY_SYSTEM if human_id is None else RESUME_QUEUE_BY_HUMAN, params)
    assert row is not None  # the statement always returns one row
    if not row["found"]:
        raise InvalidInput("endpoint", "unknown")
    return QueueChange(endpoint_id, queue, paused=False, changed=bool(row["resumed"]))
