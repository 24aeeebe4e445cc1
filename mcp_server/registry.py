"""Which key submitted which todo over MCP: the ``mcp_tasks`` table (migration 0003_tasks).

A task is its todo (todos/task_states.py reads its status); the only thing a todo does not know
is who submitted it and what time-to-live a 2025-11-25 client asked for. Who is a digest: a
key's SHA-256, or an OAuth client's grant's (``switchboard.oauth.requester_digest``: the same
across its token refreshes). These run in
a worker thread; every read joins the todo in the endpoint's scope, so a row whose todo is gone
(retention) or is another endpoint's reads as nothing.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db import connection

PAGE_SIZE = 50


@dataclass(frozen=True, slots=True)
class Submitted:
    """A todo's row here: when it was submitted and the time-to-live its client asked for."""

    created_at: dt.datetime
    ttl_ms: int | None


def record(todo_id: str, endpoint_id: UUID, key_digest: bytes, ttl_ms: int | None) -> None:
    """Record ``todo_id`` as submitted by ``key_digest``; a dedupe hit (the todo already has a
    row) keeps the first submitter's."""
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO mcp_tasks (todo_id, endpoint_id, key_digest, ttl_ms)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT (todo_id) DO NOTHING",
            [todo_id, endpoint_id, key_digest, ttl_ms],
        )


def submitted(todo_id: str, endpoint_id: UUID) -> Submitted | None:
    """The row of ``todo_id`` when the endpoint submitted it over MCP; None otherwise."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT created_at, ttl_ms FROM mcp_tasks WHERE todo_id = %s AND endpoint_id = %s",
            [todo_id, endpoint_id],
        )
        row = cur.fetchone()
    return None if row is None else Submitted(created_at=row[0], ttl_ms=row[1])


def encode_cursor(created_at: dt.datetime, todo_id: str) -> str:
    raw = json.dumps([created_at.isoformat(), todo_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: object) -> tuple[dt.datetime, str] | None:
    """The (created_at, todo_id) a cursor from ``page`` names; None for anything else."""
    if not isinstance(cursor, str) or len(cursor) > 256:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        stamp, todo_id = json.loads(raw)
        at = dt.datetime.fromisoformat(stamp)
    except (ValueError, TypeError, UnicodeDecodeError):
        return None
    if not isinstance(todo_id, str) or at.tzinfo is None:
        return None
    return at, todo_id


def page(
    endpoint_id: UUID,
    key_digest: bytes,
    after: tuple[dt.datetime, str] | None,
    size: int = PAGE_SIZE,
) -> tuple[list[tuple[str, Submitted]], str | None]:
    """The key's submitted todos, newest first (each id with its submission), and the next
    page's cursor."""
    params: list[Any] = [endpoint_id, key_digest]
    keyset = ""
    if after is not None:
        keyset = " AND (m.created_at, m.todo_id) < (%s, %s)"
        params += [after[0], after[1]]
    params.append(size + 1)
    with connection.cursor() as cur:
        cur.execute(
            "SELECT m.todo_id, m.created_at, m.ttl_ms FROM mcp_tasks m"
            " JOIN todos t ON t.id = m.todo_id AND t.endpoint_id = m.endpoint_id"
            " WHERE m.endpoint_id = %s AND m.key_digest = %s" + keyset + " ORDER BY m.created_at"
            " DESC, m.todo_id DESC LIMIT %s",
            params,
        )
        rows = cur.fetchall()
    more = len(rows) > size
    rows = rows[:size]
    cursor = encode_cursor(rows[-1][1], rows[-1][0]) if more and rows else None
    return [(row[0], Submitted(created_at=row[1], ttl_ms=row[2])) for row in rows], cursor


def open_tasks(endpoint_id: UUID, key_digest: bytes, limit: int = 100) -> list[str]:
    """The key's submitted todos that are not finished yet (``finished_at`` unset), newest
    first: what a 2025-11-25 session's GET stream follows for ``notifications/tasks/status``."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT m.todo_id FROM mcp_tasks m"
            " JOIN todos t ON t.id = m.todo_id AND t.endpoint_id = m.endpoint_id"
            " WHERE m.endpoint_id = %s AND m.key_digest = %s AND t.finished_at IS NULL"
            " ORDER BY m.created_at DESC, m.todo_id DESC LIMIT %s",
            [endpoint_id, key_digest, limit],
        )
        return [row[0] for row in cur.fetchall()]
