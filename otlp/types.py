"""The span as the trail page and the waterfall read it, built from a row by ``from_row``."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any, Self


def _hex(value: Any) -> str | None:
    return None if value is None else bytes(value).hex()


@dataclass(frozen=True, slots=True)
class SpanView:
    todo_id: str
    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_span_id: str | None
    attempt_seq: int | None
    name: str
    kind: str
    category: str
    tool: str | None
    status_code: str
    status_message: str | None
    service_name: str | None
    start_at: dt.datetime
    end_at: dt.datetime
    attributes: dict[str, Any]
    truncated: bool

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        attributes = row.get("attributes") or {}
        if isinstance(attributes, str):
            attributes = json.loads(attributes)
        return cls(
            todo_id=row["todo_id"],
            trace_id=_hex(row["trace_id"]) or "",
            span_id=_hex(row["span_id"]) or "",
            parent_span_id=_hex(row.get("parent_span_id")),
            attempt_seq=row.get("attempt_seq"),
            name=row["name"],
            kind=row["kind"],
            category=row["category"],
            tool=row.get("tool"),
            status_code=row.get("status_code") or "unset",
            status_message=row.get("status_message"),
            service_name=row.get("service_name"),
            start_at=row["start_at"],
            end_at=row["end_at"],
            attributes=attributes,
            truncated=bool(row.get("truncated")),
        )
