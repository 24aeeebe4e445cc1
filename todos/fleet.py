"""The fleet view: what an owner's endpoints' agents are doing, for the Board's endpoint pages.

Per endpoint: when one of its keys was last used (any surface: MCP, OTLP, A2A), how many MCP
subscription streams are open now across every server process, the todos it holds with their
leases, and how often its agents' attempts failed or died in the last hour and day. Every read
takes a ``Scope`` like ``todos.queries``: a foreign endpoint reads exactly like an unknown one.

All of it is one statement for any number of endpoints (``todos/sql/fleet.sql``), so the list
costs the same for one endpoint as for fifty, plus one for the claims table of a single
endpoint. Nothing here writes: the keys' ``last_used_at`` is written by the bearer resolver
(switchboard/auth.py), the stream counts by each server process (mcp_server/presence.py);
docs/decisions/0018-fleet-counts.md says why.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

from switchboard.lib import text
from switchboard.lib.sql import fetch_all, load
from switchboard.scope import ENDPOINT_ENDPOINTS_SQL, HUMAN_ENDPOINTS_SQL, Scope
from todos.models import Todo

# A server process rewrites its row of open streams when one opens or closes and refreshes it
# every STREAMS_HEARTBEAT_SECONDS while any are open (mcp_server/presence.py); a row older than
# STREAMS_STALE_SECONDS belongs to a process that stopped without saying so and is not counted.
STREAMS_HEARTBEAT_SECONDS = 10.0
STREAMS_STALE_SECONDS = 30
# The claims table on an endpoint's page: the leases closest to running out first.
CLAIMS_SHOWN = 50

_SQL = Path(__file__).parent / "sql"
_FLEET = {
    scope_sql: load(_SQL, "fleet", scope=scope_sql)
    for scope_sql in (HUMAN_ENDPOINTS_SQL, ENDPOINT_ENDPOINTS_SQL)
}


@dataclass(frozen=True, slots=True)
class FailureRate:
    """Of the attempts an endpoint's agents ended in a window, how many failed or died."""

    ended: int
    failed: int

    @property
    def percent(self) -> int | None:
        """The failed share, rounded to a whole percent; None when nothing ended."""
        if not self.ended:
            return None
        return round(100 * self.failed / self.ended)


@dataclass(frozen=True, slots=True)
class SpanRefusals:
    """Of the spans an endpoint's exporters sent in a window, how many were refused, by reason
    (otlp/store.py counts them per minute in span_refusals)."""

    unbound: int
    over_cap: int
    invalid: int

    @property
    def total(self) -> int:
        return self.unbound + self.over_cap + self.invalid


@dataclass(frozen=True, slots=True)
class EndpointFleet:
    endpoint_id: UUID
    last_seen_at: dt.datetime | None
    open_streams: int
    claims: int
    hour: FailureRate
    day: FailureRate
    refused_hour: SpanRefusals
    refused_day: SpanRefusals
    # What its model calls cost this UTC day, and the day's tokens no price covered.
    cost_today: Decimal = Decimal(0)
    unpriced_today: int = 0

    @property
    def cost_label(self) -> str:
        """Today's cost as ``switchboard/lib/text.spent`` shows it."""
        return text.spent(self.cost_today, self.unpriced_today)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> EndpointFleet:
        return cls(
            endpoint_id=row["endpoint_id"],
            last_seen_at=row["last_seen_at"],
            open_streams=row["open_streams"],
            claims=row["claims"],
            hour=FailureRate(row["ended_hour"], row["failed_hour"]),
            day=FailureRate(row["ended_day"], row["failed_day"]),
            refused_hour=SpanRefusals(
                row["unbound_hour"], row["over_cap_hour"], row["invalid_hour"]
            ),
            refused_day=SpanRefusals(row["unbound_day"], row["over_cap_day"], row["invalid_day"]),
            cost_today=Decimal(row["cost_today"]),
            unpriced_today=int(row["unpriced_today"]),
        )


def fleet(scope: Scope, endpoint_ids: Sequence[UUID]) -> dict[UUID, EndpointFleet]:
    """The fleet figures of each endpoint among ``endpoint_ids`` that ``scope`` sees (one query)."""
    if not endpoint_ids:
        return {}
    rows = fetch_all(
        _FLEET[scope.endpoints_sql],
        {
            "ids": list(endpoint_ids),
            "stale_seconds": STREAMS_STALE_SECONDS,
            **scope.params,
        },
    )
    return {row["endpoint_id"]: EndpointFleet.from_row(row) for row in rows}


def claims(scope: Scope, endpoint_id: UUID, limit: int = CLAIMS_SHOWN) -> list[Todo]:
    """The todos ``endpoint_id`` holds now (leases running or paused), the soonest lease to
    run out first and paused ones last; none for an endpoint outside ``scope``.

    Uses index: todos_board_state_idx (endpoint_id, state, …), one range per in-flight state.
    """
    return list(
        Todo.objects.filter(scope.todos(), endpoint_id=endpoint_id)
        .in_flight()
        .only(
            "id",
            "title",
            "queue",
            "state",
            "owner",
            "claimant",
            "attempt",
            "claimed_at",
            "lease_expires_at",
        )
        .order_by("lease_expires_at", "claimed_at", "id")[:limit]
    )
