"""Activity rows for the tests, written with plain SQL.

The lifecycle statements are the product's only writers of ``todo_activity``; until a test
reaches a row through one of them, it inserts the row as those statements will: every column
given except the defaults under test.
"""

from __future__ import annotations

import json
from typing import Any

from switchboard.lib.sql import fetch_all


def add_activity(todo_id: str, seq: int, **columns: Any) -> None:
    """Insert one ``todo_activity`` row; ``columns`` override the note defaults below."""
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
    fetch_all(f"INSERT INTO todo_activity ({names}) VALUES ({values}) RETURNING seq", row)


def activity_seqs(todo_id: str) -> list[int]:
    rows = fetch_all(
        "SELECT seq FROM todo_activity WHERE todo_id = %(id)s ORDER BY seq", {"id": todo_id}
    )
    return [row["seq"] for row in rows]
