"""The attempt's value type, built from a statement's row (or a jsonb copy) by ``from_row``."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields, replace
from decimal import Decimal
from typing import Any, Self
from uuid import UUID

from attempts.models import DIED_OUTCOMES
from switchboard.lib import text


def timestamp(value: Any) -> dt.datetime | None:
    """A timestamp from a row (datetime) or from jsonb (ISO-8601 text)."""
    if value is None or isinstance(value, dt.datetime):
        return value
    return dt.datetime.fromisoformat(value)


def trace_hex(value: Any) -> str | None:
    """A bytea trace id as hex: from a row (bytes, memoryview) or jsonb (``\\x…`` text)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.removeprefix("\\x").lower()
    return bytes(value).hex()


USAGE_COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "unpriced_tokens",
)


@dataclass(frozen=True, slots=True)
class Usage:
    """An attempt's or a todo's model calls: tokens by type (cache counts inside ``input``,
    reasoning inside ``output``, as the GenAI conventions count them), the cost of the priced
    ones, and the tokens of the calls no price covers (``unpriced_tokens``: never shown as $0).
    Kept on the rows by the OTLP ingest (otlp/store.py)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    unpriced_tokens: int = 0
    cost_usd: Decimal = Decimal(0)

    @classmethod
    def from_row(cls, row: Any) -> Usage:
        """From a row (a dict, or a jsonb copy) or a model instance; absent columns count 0."""
        get = row.get if isinstance(row, dict) else (lambda k, d=None: getattr(row, k, d))
        cost = get("cost_usd")
        return cls(
            input_tokens=int(get("input_tokens") or 0),
            output_tokens=int(get("output_tokens") or 0),
            cache_read_tokens=int(get("cache_read_tokens") or 0),
            cache_write_tokens=int(get("cache_write_tokens") or 0),
            reasoning_tokens=int(get("reasoning_tokens") or 0),
            unpriced_tokens=int(get("unpriced_tokens") or 0),
            cost_usd=Decimal(str(cost)) if cost is not None else Decimal(0),
        )

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def any(self) -> bool:
        return bool(self.tokens or self.cost_usd)

    @property
    def priced_cost(self) -> Decimal | None:
        """The cost, or None when every call was unpriced (nothing priced is not $0)."""
        if not self.cost_usd and self.unpriced_tokens:
            return None
        return self.cost_usd

    def cost_label(self) -> str:
        """The cost as people read it (``switchboard/lib/text.money``: ``$0.14``, ``$0.0012``,
        ``<$0.0001``), or ``unpriced`` when no call was priced (never ``$0.00`` for tokens
        nobody priced)."""
        cost = self.priced_cost
        return "unpriced" if cost is None else text.money(cost)

    def label(self) -> str:
        """The cost and the tokens in one line, for the trail and the fleet."""
        parts = [self.cost_label(), f"{self.input_tokens:,} in / {self.output_tokens:,} out tokens"]
        if self.cache_read_tokens:
            parts.append(f"{self.cache_read_tokens:,} from cache")
        if self.reasoning_tokens:
            parts.append(f"{self.reasoning_tokens:,} reasoning")
        if self.unpriced_tokens and self.cost_usd:
            parts.append(f"{self.unpriced_tokens:,} unpriced")
        return " · ".join(parts)

    def as_json(self) -> dict[str, Any]:
        """``usage`` as get_todo, the todo resource and A2A show it."""
        cost = self.priced_cost
        return {
            "tokens": {
                "input": self.input_tokens,
                "output": self.output_tokens,
                "cache_read": self.cache_read_tokens,
                "cache_write": self.cache_write_tokens,
                "reasoning": self.reasoning_tokens,
            },
            "cost_usd": None if cost is None else float(round(cost, 9)),
            "unpriced_tokens": self.unpriced_tokens,
        }


NO_USAGE = Usage()


@dataclass(frozen=True, slots=True)
class AttemptView:
    todo_id: str
    seq: int
    attempt: int
    claimer_kind: str
    claimer_endpoint_id: UUID | None
    claimer_session: str | None
    owner: str
    claimant: str | None
    claimed_at: dt.datetime
    last_heartbeat_at: dt.datetime | None
    lease_expires_at: dt.datetime
    ended_at: dt.datetime | None
    outcome: str | None
    disposition: str | None
    summary: str | None
    summary_truncated: bool
    artifact: str | None
    notes_dropped: int = 0
    # The attempt's trace id as 32 lowercase hex digits (None: no trace), and the spans refused
    # once the attempt held its span cap.
    trace_id: str | None = None
    spans_dropped: int = 0
    usage: Usage = NO_USAGE
    # Spans the ingest stored for the attempt, ever: span retention and forgetting remove
    # spans, never this count (attempts/migrations/0008_spans_stored.py).
    spans_stored: int = 0

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        values: dict[str, Any] = {name: row.get(name) for name in _ATTEMPT_FIELDS}
        values["usage"] = Usage.from_row(row) if "cost_usd" in row else NO_USAGE
        for name in ("claimed_at", "last_heartbeat_at", "lease_expires_at", "ended_at"):
            values[name] = timestamp(values[name])
        if isinstance(values["claimer_endpoint_id"], str):
            values["claimer_endpoint_id"] = UUID(values["claimer_endpoint_id"])
        values["summary_truncated"] = bool(values["summary_truncated"])
        values["notes_dropped"] = values["notes_dropped"] or 0
        values["spans_dropped"] = values["spans_dropped"] or 0
        values["spans_stored"] = values["spans_stored"] or 0
        values["trace_id"] = trace_hex(values["trace_id"])
        return cls(**values)

    def with_lease(self, seq: int, lease_expires_at: dt.datetime | None) -> AttemptView:
        """This attempt as reads show it, given its todo's ``attempts_total`` (``seq``) and live
        lease: the open attempt carries the todo's lease, the authoritative copy.

        The attempt's own ``lease_expires_at`` moves only with the sampled heartbeat write (at
        most once a minute, docs/decisions/0006-heartbeat-sampling.md), so after a heartbeat with
        a new TTL it can lag the real lease by the whole difference. A paused todo (no lease)
        keeps the attempt's copy: the lease as it stood when it paused. Closed attempts, and an
        open one that is not the todo's current attempt (read from another snapshot), are
        returned unchanged.
        """
        if (
            self.ended_at is not None
            or self.seq != seq
            or lease_expires_at is None
            or lease_expires_at == self.lease_expires_at
        ):
            return self
        return replace(self, lease_expires_at=lease_expires_at)

    @property
    def died(self) -> bool:
        """The lease ended without its holder reporting (lapsed and taken over, or reaped)."""
        return self.outcome in DIED_OUTCOMES

    @property
    def is_open(self) -> bool:
        return self.ended_at is None


# Read once: dataclasses.fields() builds its tuple on every call, and from_row runs on every
# claim that carries prior attempts.
_ATTEMPT_FIELDS = tuple(f.name for f in fields(AttemptView) if f.name != "usage")
