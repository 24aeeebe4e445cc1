"""Todo retention on the partitioned spans (otlp/migrations/0006_partitioned_spans.py): a
deleted todo's spans go with it by cascade from every partition they sit in, and span
retention (otlp/partitions.py) is its own: it drops days of spans, never a todo."""

from __future__ import annotations

import datetime as dt

import pytest

from otlp import partitions
from otlp.store import store
from otlp.translate import collect, translate
from switchboard.lib.sql import fetch_all, fetch_one
from tests.base import Personas
from tests.otlp.helpers import SpanSpec, claimed_with_trace, request, trace_id
from todos import lifecycle, retention
from todos.models import Todo

pytestmark = pytest.mark.django_db


def day_ago(n: int) -> dt.date:
    row = fetch_one("SELECT (now() AT TIME ZONE 'UTC')::date - %(n)s AS day", {"n": n})
    assert row is not None
    return row["day"]


def finished_with_spans(p: Personas, n: int) -> str:
    claim = claimed_with_trace(p.endpoint_a.id, trace := trace_id())
    specs = [SpanSpec(trace, name=f"s{i}") for i in range(n)]
    rows = [translate(c, claim.todo.id, 1, False) for c in collect(request(specs)).candidates]
    assert store(rows, set(), attempt_cap=100, todo_cap=100).accepted == n
    lifecycle.complete(p.endpoint_a.id, claim.todo.id, owner="endpoint:agent")
    return claim.todo.id


def placed(todo_id: str, name: str, at: str) -> None:
    fetch_all(
        f"UPDATE todo_spans SET received_at = {at} WHERE todo_id = %(id)s AND name = %(name)s",
        {"id": todo_id, "name": name},
    )


def parts(todo_id: str) -> set[str]:
    rows = fetch_all(
        "SELECT DISTINCT tableoid::regclass::text AS part FROM todo_spans WHERE todo_id = %(id)s",
        {"id": todo_id},
    )
    return {r["part"] for r in rows}


def test_a_todo_retention_deletes_takes_its_spans_from_every_partition(
    personas: Personas,
) -> None:
    old_day = day_ago(20)
    fetch_all("SELECT sb_span_partition_add(%(d)s)", {"d": old_day})
    gone = finished_with_spans(personas, 3)
    kept = finished_with_spans(personas, 2)
    placed(gone, "s0", f"timestamptz '{old_day} 12:00+00'")
    placed(gone, "s1", "now() - interval '200 days'")  # no partition for it: the default
    assert len(parts(gone)) == 3
    fetch_all(
        "UPDATE todos SET finished_at = now() - interval '400 days' WHERE id = %(id)s",
        {"id": gone},
    )

    result = retention.run()

    assert result.todos == 1
    assert not Todo.objects.filter(id=gone).exists()
    assert fetch_all("SELECT 1 FROM todo_spans WHERE todo_id = %(id)s", {"id": gone}) == []
    assert len(fetch_all("SELECT 1 FROM todo_spans WHERE todo_id = %(id)s", {"id": kept})) == 2


def test_span_retention_drops_old_spans_and_never_a_todo(personas: Personas) -> None:
    old_day = day_ago(45)
    fetch_all("SELECT sb_span_partition_add(%(d)s)", {"d": old_day})
    todo_id = finished_with_spans(personas, 2)
    placed(todo_id, "s0", f"timestamptz '{old_day} 12:00+00'")

    report = partitions.maintain(days=30)
    swept = retention.run()

    assert report.dropped == [old_day]
    assert swept.todos == 0 and Todo.objects.filter(id=todo_id).exists()
    remaining = fetch_all("SELECT name FROM todo_spans WHERE todo_id = %(id)s", {"id": todo_id})
    assert remaining == [{"name": "s1"}]
