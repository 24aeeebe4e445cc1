"""Reading PostgreSQL's EXPLAIN (FORMAT JSON) output in tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of a plan, the node itself first, then its children, depth first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)
