"""Read ``todos`` and ``todo_attempts`` as stored, with SQL.

Assertions read the rows directly (not the transitions' return values), so a statement that
returns the right row but writes the wrong one is caught. Under a plain ``django_db`` test
PostgreSQL's ``now()`` is one instant for the whole transaction, so ``seconds_until`` is exact.
"""

from __future__ import annotations

import json
from typing import Any

from switchboard.lib.sql import fetch_all, fetch_one

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
