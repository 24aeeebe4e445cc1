"""What the trail page's waterfalls read of the stored spans (``otlp/sql/spans_for_todo.sql``).

``SpanView`` carries only what a bar draws; the span's attributes stay in the database, where
the attempt's token totals are summed (``AttemptSpans``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SpanView:
    """A span as its bar draws it, its fields in the order ``otlp/sql/spans_for_todo.sql``
    reads them (``otlp/store.py`` builds it from the row's tail)."""

    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_span_id: str | None
    name: str
    category: str
    tool: str | None
    status_code: str
    start_at: dt.datetime
    end_at: dt.datetime


@dataclass(frozen=True, slots=True)
class AttemptSpans:
    """One attempt's first spans in start order, how many it holds, and the token counts of
    all of them (drawn or not), summed in SQL."""

    spans: list[SpanView]
    total: int
    input_tokens: int = 0
    output_tokens: int = 0
