"""Activity rows for the tests, written with plain SQL.

The lifecycle statements are the product's only writers of ``todo_activity``; until a test
reaches a row through one of them, it inserts the row as those statements will: every column
given except the defaults under test.

``record`` writes a row exactly as a writer does, its seq taken from ``todos.activity_seq``;
the helpers below it pair a real transition with the row its writer will add (``board``,
``agent_note``), or write the row of an actor outside the lifecycle's tests (the sweeper, A2A,
the doorbell). When the lifecycle writes a row itself, its helper keeps the transition and
drops its ``record`` call: nothing else in the tests changes.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from uuid import UUID

from switchboard.lib.sql import fetch_all, fetch_one
from tests import reach
from todos import lifecycle

# The row a writer adds, its seq allocated under the todo's row lock as the writers do.
_RECORD = """
WITH s AS (
    UPDATE todos SET activity_seq = activity_seq + 1 WHERE id = %(todo_id)s
    RETURNING activity_seq, endpoint_id
)
INSERT INTO todo_activity (todo_id, endpoint_id, seq, attempt_seq, at, kind, actor_kind,
                           actor_ref, message, truncated, detail)
SELECT %(todo_id)s, s.endpoint_id, s.activity_seq, %(attempt_seq)s, COALESCE(%(at)s, now()),
       %(kind)s, %(actor_kind)s, %(actor_ref)s, %(message)s, %(truncated)s, %(detail)s::jsonb
  FROM s
RETURNING seq
"""


def add_activity(todo_id: str, seq: int, **columns: Any) -> None:
    """Insert one ``todo_activity`` row; ``columns`` override the note defaults below. Its
    endpoint_id is its todo's, as every writer copies it, unless ``columns`` name one."""
    row = {
        "todo_id": todo_id,
        "seq": seq,
        "kind": "note",
        "actor_kind": "endpoint",
        "actor_ref": "agent-a",
        **columns,
    }
    if "detail" in row and not isinstance(row["detail"], str):
        row["detail"] = json.dumps(row["detail"])
    names = ", ".join(row)
    values = ", ".join(f"%({name})s::jsonb" if name == "detail" else f"%({name})s" for name in row)
    if "endpoint_id" not in row:
        names += ", endpoint_id"
        values += ", (SELECT t.endpoint_id FROM todos t WHERE t.id = %(todo_id)s)"
    fetch_all(f"INSERT INTO todo_activity ({names}) VALUES ({values}) RETURNING seq", row)


def activity_seqs(todo_id: str) -> list[int]:
    rows = fetch_all(
        "SELECT seq FROM todo_activity WHERE todo_id = %(id)s ORDER BY seq", {"id": todo_id}
    )
    return [row["seq"] for row in rows]


def record(
    todo_id: str,
    kind: str,
    *,
    actor_kind: str,
    actor_ref: str,
    attempt_seq: int | None = None,
    message: str | None = None,
    truncated: bool = False,
    detail: dict[str, Any] | None = None,
    at: dt.datetime | None = None,
) -> int:
    """Write one row as the lifecycle's writers will (``at`` defaults to now()); its seq."""
    row = fetch_one(
        _RECORD,
        {
            "todo_id": todo_id,
            "kind": kind,
            "actor_kind": actor_kind,
            "actor_ref": actor_ref,
            "attempt_seq": attempt_seq,
            "message": message,
            "truncated": truncated,
            "detail": json.dumps(detail or {}),
            "at": at,
        },
    )
    assert row is not None, f"todo {todo_id} is not in the table"
    return int(row["seq"])


def current_attempt(todo_id: str) -> int | None:
    row = fetch_one("SELECT attempts_total, state FROM todos WHERE id = %(id)s", {"id": todo_id})
    assert row is not None
    return int(row["attempts_total"]) or None


def state_of(todo_id: str) -> str:
    row = fetch_one("SELECT state FROM todos WHERE id = %(id)s", {"id": todo_id})
    assert row is not None
    return str(row["state"])


def agent_note(
    endpoint_id: UUID, todo_id: str, owner: str, message: str, *, at: dt.datetime | None = None
) -> int:
    """The holder heartbeats with a progress note; return the note's seq. ``at`` moves the row
    in time afterwards (the clock is PostgreSQL's, which tests cannot move)."""
    lifecycle.heartbeat(endpoint_id, todo_id, owner=owner, note=message)
    return _written(todo_id, at)


def _written(todo_id: str, at: dt.datetime | None) -> int:
    """The seq of the activity row the todo's last transition wrote, moved to ``at``."""
    row = fetch_one("SELECT activity_seq FROM todos WHERE id = %(id)s", {"id": todo_id})
    assert row is not None and row["activity_seq"] > 0
    seq = int(row["activity_seq"])
    if at is not None:
        fetch_all(
            "UPDATE todo_activity SET at = %(at)s WHERE todo_id = %(id)s AND seq = %(seq)s"
            " RETURNING seq",
            {"at": at, "id": todo_id, "seq": seq},
        )
    return seq


# The operator transitions by action name, with the keyword each takes for its words.
_OPERATOR = {
    "claim": lambda h, t, text: lifecycle.operator_claim(h, t),
    "complete": lambda h, t, text: lifecycle.operator_complete(h, t, summary=text),
    "fail": lambda h, t, text: lifecycle.operator_fail(h, t, summary=text),
    "release": lambda h, t, text: lifecycle.operator_release(h, t, summary=text),
    "extend": lambda h, t, text: lifecycle.operator_extend(h, t),
    "retry": lambda h, t, text: lifecycle.operator_retry(h, t),
    "cancel": lambda h, t, text: lifecycle.operator_cancel(h, t, reason=text),
}


def board(human_id: int, action: str, todo_id: str, text: str | None = None) -> int:
    """A human acts from the Board (the operator transition, which writes its human_action
    row); return the row's seq."""
    _OPERATOR[action](human_id, todo_id, text)
    return _written(todo_id, None)


def swept_retry(todo_id: str, *, at: dt.datetime | None = None) -> int:
    """The sweeper requeued a failed todo whose retry was due."""
    return record(
        todo_id,
        "retried",
        actor_kind="system",
        actor_ref="sweeper",
        detail={"from": "failed", "to": "pending"},
        at=at,
    )


def rung(todo_id: str, subscribers: int = 1, *, at: dt.datetime | None = None) -> int:
    """The doorbell rang for a pending todo."""
    return record(
        todo_id,
        "rung",
        actor_kind="system",
        actor_ref="doorbell",
        detail={"subscribers": subscribers},
        at=at,
    )


def a2a(todo_id: str, owner: str, action: str, before: str, after: str) -> int:
    """The holder interrupted, rejected or canceled its todo over A2A."""
    return record(
        todo_id,
        "a2a_state",
        actor_kind="endpoint",
        actor_ref=owner,
        attempt_seq=current_attempt(todo_id),
        detail={"action": action, "from": before, "to": after},
    )


def swept_dead_letters(endpoint_id: UUID) -> tuple[str, str, str]:
    """A pending todo past its finish_by, one never claimed by its start_by, and a claimed one
    whose cost reached its cap of $0.01, each dead-lettered by its sweep (deadlines.sql,
    over_cap.sql); their ids in that order."""
    late = reach.new_todo(endpoint_id, "work").id
    unclaimed = reach.new_todo(endpoint_id, "work").id
    for column, todo_id in (("finish_by", late), ("start_by", unclaimed)):
        fetch_all(
            f"UPDATE todos SET {column} = now() - interval '1 second' WHERE id = %(id)s",
            {"id": todo_id},
        )
    assert set(lifecycle.dead_letter_late()) == {late, unclaimed}
    capped = reach.claimed(endpoint_id, "work", owner=reach.BOT, claimant="harness/run-1").todo.id
    fetch_all(
        "UPDATE todos SET max_cost_usd = 0.01, cost_usd = 0.0215 WHERE id = %(id)s",
        {"id": capped},
    )
    assert lifecycle.end_over_cap() == (capped,)
    return late, unclaimed, capped
