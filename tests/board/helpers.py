"""Reach Board states through real transitions (never by writing the state column)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db import connection

from todos import lifecycle
from todos.types import TodoView

BOT = "bot-1"


def new_todo(endpoint_id: UUID, queue: str = "work", **kwargs: Any) -> TodoView:
    kwargs.setdefault("title", "a task")
    return lifecycle.create(endpoint_id, queue=queue, **kwargs)


def claimed(endpoint_id: UUID, queue: str = "work", **kwargs: Any) -> str:
    todo = new_todo(endpoint_id, queue, **kwargs)
    return lifecycle.claim(endpoint_id, todo.id, owner=BOT, claimant="harness/run-1").todo.id


def expire_lease(todo_id: str) -> None:
    # Leases lapse in PostgreSQL's clock, which tests cannot move: move the row instead.
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE todos SET lease_expires_at = now() - interval '1 second' WHERE id = %s",
            [todo_id],
        )


def set_created_at(todo_id: str, seconds_ago: int) -> None:
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE todos SET created_at = now() - %s * interval '1 second' WHERE id = %s",
            [seconds_ago, todo_id],
        )


def died_then_failed(endpoint_id: UUID) -> str:
    """A todo whose first attempt died (reaped) and whose second failed (reported)."""
    todo_id = claimed(endpoint_id, max_attempts=5)
    expire_lease(todo_id)
    swept = lifecycle.reap()
    assert todo_id in swept.requeued
    lifecycle.claim(endpoint_id, todo_id, owner=BOT, claimant="harness/run-2")
    lifecycle.fail(endpoint_id, todo_id, owner=BOT, summary="the build is red", retryable=True)
    return todo_id
