"""``TodoView.from_row`` stores its fields through their slots rather than the dataclass's
``__init__`` (todos/types.py says why): what it builds must equal what ``__init__`` builds from
the same row, for each kind of row a statement returns."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import uuid
from decimal import Decimal
from typing import Any

import pytest

from attempts.types import USAGE_COLUMNS
from todos.types import VIEW_COLUMNS, TodoView

NOW = dt.datetime(2026, 12, 6, 12, 0, tzinfo=dt.UTC)


def _row(**extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(VIEW_COLUMNS)
    row.update(
        id="t_1",
        endpoint_id=uuid.uuid4(),
        queue="q",
        title="a title",
        payload=json.dumps({"n": 1, "tags": ["a", "b"]}),
        work_order="",
        routing_trace=json.dumps([{"rule": "r"}]),
        state="claimed",
        owner="agent-1",
        lease_expires_at=NOW,
        attempt=1,
        max_attempts=5,
        claimed_at=NOW,
        result=None,
        created_at=NOW,
        updated_at=NOW,
        ring_attempts=0,
        input_request={"already": "decoded"},
        attempts_total=1,
        attempts_pruned=0,
        priority=3,
        attempt_seq=1,  # a statement's extra column, not the view's
    )
    row.update(extra)
    return row


def _by_init(row: dict[str, Any]) -> TodoView:
    """What the dataclass's own ``__init__`` makes of ``row``."""
    values = {name: row[name] for name in VIEW_COLUMNS}
    for name in ("payload", "routing_trace", "result", "input_request"):
        if isinstance(values[name], str):
            values[name] = json.loads(values[name])
    if "forgotten_at" in row:
        values |= {"forgotten_at": row["forgotten_at"], "forgotten_by": row["forgotten_by"]}
    if "cost_usd" in row:
        values["max_cost_usd"] = row["max_cost_usd"]
        values["usage_columns"] = tuple(row[n] for n in (*USAGE_COLUMNS, "cost_usd"))
    return TodoView(**values)


USAGE = {name: 7 for name in USAGE_COLUMNS} | {"cost_usd": Decimal("0.25")}


@pytest.mark.parametrize(
    "row",
    [
        _row(),
        _row(forgotten_at=NOW, forgotten_by="human:1"),
        _row(max_cost_usd=Decimal("2.50"), **USAGE),
        _row(forgotten_at=None, forgotten_by=None, max_cost_usd=None, **USAGE),
    ],
    ids=["view columns", "tombstone", "cost columns", "all of them"],
)
def test_from_row_builds_what_init_builds(row: dict[str, Any]) -> None:
    view = TodoView.from_row(row)
    expected = _by_init(row)
    assert view == expected
    # Every slot set, none left to raise AttributeError on a read.
    for field in dataclasses.fields(TodoView):
        assert getattr(view, field.name) == getattr(expected, field.name)
    assert view.payload == {"n": 1, "tags": ["a", "b"]}
    assert view.deduplicated is False


def test_a_view_from_row_stays_frozen() -> None:
    view = TodoView.from_row(_row())
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.state = "pending"  # type: ignore[misc]
    assert dataclasses.replace(view, deduplicated=True).deduplicated is True
