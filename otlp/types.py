"""What the trail page's waterfalls read of the stored spans (``otlp/sql/spans_for_todo.sql``).

``SpanView`` carries only what a bar draws; the span's attributes stay in the database, where
the attempt's token totals are summed (``AttemptSpans``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Self


def _hex(value: Any) -> str | None:
    return None if value is None else bytes(value).hex()


@dataclass(frozen=True, slots=True)
class SpanView:
    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_span_id: str | None
    name: str
    category: str
    tool: str | None
    status_code: str
    start_at: dt.datetime
    end_at: dt.datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        return cls(
            trace_id=_hex(row["trace_id"]) or "",
            span_id=_hex(row["span_id"]) or "",
            parent_span_id=_hex(row["parent_span_id"]),
            name=row["name"],
            category=row["category"],
            tool=row["tool"],
            status_code=row["status_code"] or "unset",
            start_at=row["start_at"],
            end_at=row["end_at"],
        )


@dataclass(frozen=True, slots=True)
class AttemptSpans:
    """One attempt's first spans in start order, how many it holds, and the token counts of
    all of them (drawn or not), summed in SQL."""

    spans: list[SpanView]
    total: int
    input_tokens: int = 0
    output_tokens: int = 0
