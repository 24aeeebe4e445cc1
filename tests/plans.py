"""Reading PostgreSQL's plans of the project's statements in tests: EXPLAIN (FORMAT JSON) of a
statement as it runs prepared (its generic plan) or planned for its values, and the nodes of
either."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import psycopg
from django.db import connection

from switchboard.lib.sql import numbered


def plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of a plan, the node itself first, then its children, depth first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def _names(sql: str) -> tuple[str, tuple[str, ...]]:
    text, order = numbered(sql)
    assert isinstance(order, tuple), "a statement with named parameters"
    return text, order


def generic_plan(
    sql: str, values: Mapping[str, Any], types: Mapping[str, str], *, analyze: bool = False
) -> dict[str, Any]:
    """The plan PostgreSQL keeps for ``sql`` once prepared, for any values (PostgreSQL 15 has no
    EXPLAIN (GENERIC_PLAN): PREPARE with the parameters' ``types``, then EXPLAIN EXECUTE under
    plan_cache_mode = force_generic_plan). ``analyze`` runs it: inside the test's transaction,
    rolled back after; ``values`` then give what it runs with."""
    text, names = _names(sql)
    raw = connection.connection
    assert raw is not None
    cur = psycopg.ClientCursor(raw)
    cur.execute("SET plan_cache_mode = force_generic_plan")
    cur.execute(f"PREPARE plan_probe ({', '.join(types[n] for n in names)}) AS {text}")
    try:
        args = ", ".join(f"%s::{types[n]}" for n in names)
        options = "ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON"
        cur.execute(
            f"EXPLAIN ({options}) EXECUTE plan_probe ({args})", [values.get(n) for n in names]
        )
        row = cur.fetchone()
    finally:
        cur.execute("DEALLOCATE plan_probe")
        cur.execute("RESET plan_cache_mode")
    assert row is not None
    plan: dict[str, Any] = row[0][0]["Plan"]
    return plan


def custom_plan(sql: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The plan PostgreSQL makes for ``sql`` planned for ``values`` (not run)."""
    text, names = _names(sql)
    raw = connection.connection
    assert raw is not None
    cur = psycopg.RawCursor(raw)
    cur.execute(f"EXPLAIN (FORMAT JSON) {text}", [values[n] for n in names])
    row = cur.fetchone()
    assert row is not None
    plan: dict[str, Any] = row[0][0]["Plan"]
    return plan
