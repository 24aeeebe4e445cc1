"""Helpers for the lifecycle tests: reach states through real transitions, read rows with SQL.

Assertions read ``todos`` and ``todo_attempts`` directly (not the transitions' return values),
so a statement that returns the right row but writes the wrong one is caught.

Under a plain ``django_db`` test everything runs in one transaction, so PostgreSQL's ``now()``
is the same instant throughout the test; helpers that expire leases or make retries due move
the row's timestamps, never the clock.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import psycopg
from django.db import connection
from psycopg.conninfo import make_conninfo

from switchboard.lib.sql import fetch_all, fetch_one
from todos import lifecycle
from todos.types import ClaimResult, TodoView

OWNER = "worker-1"
QUEUE = "default"


JSON_COLUMNS = ("payload", "routing_trace", "result", "input_request")


def todo_row(todo_id: str) -> dict[str, Any]:
    """The todo's row as stored, its jsonb columns decoded.

    Django's connection loads jsonb as text (JSONField decodes it itself), so raw reads decode.
    """
    row = fetch_one("SELECT * FROM todos WHERE id = %(id)s", {"id": todo_id})
    assert row is not None, f"todo {todo_id} is not in the table"
    for column in JSON_COLUMNS:
        if isinstance(row[column], str):
            row[column] = json.loads(row[column])
    return row


def attempt_rows(todo_id: str) -> list[dict[str, Any]]:
    """The todo's attempt rows as stored, oldest first."""
    return fetch_all(
        "SELECT * FROM todo_attempts WHERE todo_id = %(id)s ORDER BY seq", {"id": todo_id}
    )


def open_attempts(todo_id: str) -> list[dict[str, Any]]:
    return [a for a in attempt_rows(todo_id) if a["ended_at"] is None]


def only_attempt(todo_id: str) -> dict[str, Any]:
    rows = attempt_rows(todo_id)
    assert len(rows) == 1, rows
    return rows[0]


def snapshot(todo_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Everything stored about a todo, to prove a refused call changed nothing."""
    return todo_row(todo_id), attempt_rows(todo_id)


def count(table: str) -> int:
    assert table in ("todos", "todo_attempts")
    row = fetch_one(f"SELECT count(*) AS n FROM {table}", {})
    assert row is not None
    return int(row["n"])


def seconds_until(todo_id: str, column: str) -> float:
    """``todos.<column> - now()`` in seconds (now() is fixed for the test's transaction)."""
    assert column in ("lease_expires_at", "next_retry_at")
    row = fetch_one(
        f"SELECT extract(epoch FROM {column} - now())::float8 AS s FROM todos WHERE id = %(id)s",
        {"id": todo_id},
    )
    assert row is not None and row["s"] is not None
    return float(row["s"])


def db_now() -> Any:
    row = fetch_one("SELECT now() AS now", {})
    assert row is not None
    return row["now"]


def expire_lease(todo_id: str) -> None:
    """Make the todo's lease lapse (a second ago), as if its holder had died."""
    fetch_all(
        "UPDATE todos SET lease_expires_at = now() - interval '1 second' WHERE id = %(id)s",
        {"id": todo_id},
    )


def make_retry_due(todo_id: str) -> None:
    """Bring a scheduled retry's time to a second ago."""
    rows = fetch_all(
        "UPDATE todos SET next_retry_at = now() - interval '1 second'"
        " WHERE id = %(id)s AND next_retry_at IS NOT NULL RETURNING id",
        {"id": todo_id},
    )
    assert rows, f"todo {todo_id} has no retry scheduled"


def set_created_at(todo_id: str, seconds_ago: int) -> None:
    fetch_all(
        "UPDATE todos SET created_at = now() - %(s)s * interval '1 second' WHERE id = %(id)s",
        {"id": todo_id, "s": seconds_ago},
    )


def new_todo(endpoint_id: UUID, queue: str = QUEUE, **kwargs: Any) -> TodoView:
    return lifecycle.create(endpoint_id, queue=queue, title="a task", **kwargs)


def claimed(
    endpoint_id: UUID,
    queue: str = QUEUE,
    *,
    owner: str = OWNER,
    max_attempts: int = 5,
    **claim_kwargs: Any,
) -> ClaimResult:
    """A fresh todo, claimed by id by ``owner``."""
    todo = new_todo(endpoint_id, queue, max_attempts=max_attempts)
    return lifecycle.claim(endpoint_id, todo.id, owner=owner, **claim_kwargs)


def reclaim(endpoint_id: UUID, todo_id: str, *, owner: str = OWNER, **kw: Any) -> ClaimResult:
    return lifecycle.claim(endpoint_id, todo_id, owner=owner, **kw)


def raw_connection(*, autocommit: bool = False) -> psycopg.Connection[Any]:
    """A psycopg connection of its own to the test database (not Django's)."""
    s = connection.settings_dict
    conninfo = make_conninfo(
        dbname=s["NAME"],
        host=s["HOST"] or None,
        port=str(s["PORT"]) if s["PORT"] else None,
        user=s["USER"] or None,
        password=s["PASSWORD"] or None,
    )
    return psycopg.connect(conninfo, autocommit=autocommit)
