"""fetch_all, the lifecycle's only reader of statement results, returns exactly what Django's own
cursor returns: its row-factory and timestamp-loader shortcuts (docs/decisions/0002-kept-cursor.md)
must not change a single value, type or time zone."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import connection

from switchboard.lib.sql import fetch_all
from tests.base import Personas
from tests.reach import claimed

TIMES = """
SELECT %(a)s::timestamptz AS a, %(b)s::timestamptz AS b, %(c)s::timestamptz AS c,
       NULL::timestamptz AS d, now() AS e, ARRAY[now(), NULL]::timestamptz[] AS f
"""
TIME_PARAMS = {
    "a": "2026-07-01 10:00:00.123456+05:30",
    "b": "1999-12-31 23:59:59.999999-08",
    "c": "0001-01-01 00:00:00+00",
}


def _django_rows(sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows as Django's cursor returns them, with its own loaders."""
    with connection.cursor() as cur:
        cur.execute(sql, params)
        columns = [col.name for col in cur.description]
        return [dict(zip(columns, row, strict=True)) for row in cur.fetchall()]


def _typed(row: dict[str, Any]) -> dict[str, Any]:
    """Each value with its type and, for datetimes, the tzinfo object itself."""
    return {
        k: (type(v), v, v.tzinfo if isinstance(v, dt.datetime) else None) for k, v in row.items()
    }


def test_fetch_all_reads_timestamps_exactly_as_djangos_cursor_does(db: None) -> None:
    ours = fetch_all(TIMES, TIME_PARAMS)
    django = _django_rows(TIMES, TIME_PARAMS)

    assert [_typed(r) for r in ours] == [_typed(r) for r in django]
    row = ours[0]
    assert row["a"] == dt.datetime(2026, 7, 1, 4, 30, 0, 123456, tzinfo=dt.UTC)
    assert row["a"].tzinfo is dt.UTC and row["e"].tzinfo is dt.UTC
    assert row["d"] is None


def test_fetch_all_reads_a_claimed_todo_exactly_as_djangos_cursor_does(
    personas: Personas,
) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id
    sql = "SELECT t.*, 1 AS attempt_seq FROM todos t WHERE t.id = %(id)s"

    ours = fetch_all(sql, {"id": todo_id})
    django = _django_rows(sql, {"id": todo_id})

    assert len(ours) == 1
    assert [_typed(r) for r in ours] == [_typed(r) for r in django]
    assert isinstance(ours[0]["claimed_at"], dt.datetime)


def test_fetch_all_returns_no_rows_for_a_statement_without_a_result(db: None) -> None:
    assert fetch_all("UPDATE todos SET title = title WHERE false", {}) == []
    assert fetch_all("SELECT 1 AS one WHERE false", {}) == []
