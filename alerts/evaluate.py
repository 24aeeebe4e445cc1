"""The evaluators: what fires now, per rule kind, as ``Firing`` rows (reads only).

Each SQL kind reads its statement (``alerts/sql/fire_<kind>.sql``) over the rules of that kind,
each rule expanded to the endpoints it covers (``_rule_endpoints.sql``, owner-scoped through
``switchboard/scope.py``). The budgets come from outside (``alerts/sources.py``) and are
matched here in Python (``budget_firings``), so they test with constructed values; a budget
warning whose channel hears in the same evaluation that the budget is exceeded is not opened
(``unsuperseded``).
``alerts/sweep.py`` hands what fires to ``open_alerts.sql`` / ``resolve_alerts.sql``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

from alerts import messages
from alerts.models import RuleKind
from alerts.sources import BudgetStatusLike
from switchboard.lib.sql import fetch_all, load
from switchboard.models import Endpoint
from switchboard.scope import OWNER_ENDPOINTS_SQL, OWNER_TEAMS_SQL
from todos import limits

# Events are looked for this far back (and never before their rule was made); a sweeper down
# for longer misses the events of the gap (docs/guides/alerts.md).
EVENT_LOOKBACK_SECONDS = 3600
WARNING_SHARE = Decimal("0.8")

_SQL = Path(__file__).resolve().parent / "sql"
_FRAGMENTS = {"owner_endpoints": OWNER_ENDPOINTS_SQL, "owner_teams": OWNER_TEAMS_SQL}
SQL_KINDS = (
    RuleKind.DEAD_LETTER,
    RuleKind.DEADLINE_MISSED,
    RuleKind.DEPTH,
    RuleKind.OLDEST_PENDING,
    RuleKind.SILENT_CLAIM,
    RuleKind.PUSH_BREAKER,
)
FIRE = {str(kind): load(_SQL, f"fire_{kind}", **_FRAGMENTS) for kind in SQL_KINDS}
RULE_ENDPOINTS = load(_SQL, "rule_endpoints", **_FRAGMENTS)
# By name, for tests and ``manage.py sql``-style inspection.
STATEMENTS = {f"fire_{kind}": text for kind, text in FIRE.items()} | {
    "rule_endpoints": RULE_ENDPOINTS
}


@dataclass(frozen=True, slots=True)
class Firing:
    """One rule firing for one subject now."""

    rule_id: int
    subject: str
    endpoint_id: UUID
    queue: str | None
    todo_id: str | None
    detail: dict[str, Any] = field(default_factory=dict)
    summary: str = ""


def read(kind: str) -> list[Firing]:
    """What the rules of SQL kind ``kind`` find firing now, each with its summary. An event
    about a todo already forgotten keeps only what a forgotten todo's alert may
    (``messages.forgotten``), as the forget rewrites the alerts raised before it."""
    rows = fetch_all(FIRE[kind], {"kind": kind, "lookback_seconds": EVENT_LOOKBACK_SECONDS})
    return summarised(
        kind,
        (
            Firing(
                r["rule_id"],
                r["subject"],
                r["endpoint_id"],
                r["queue"],
                r["todo_id"],
                _detail(r),
            )
            for r in rows
        ),
    )


def _detail(row: dict[str, Any]) -> dict[str, Any]:
    """A fired row's detail, cut to what a forgotten todo's alert keeps when the row says its
    todo is forgotten (``fire_dead_letter.sql``, ``fire_deadline_missed.sql``)."""
    detail = _plain(row["detail"])
    return messages.forgotten(detail) if row.get("forgotten") else detail


def rule_endpoints(kind: str) -> list[dict[str, Any]]:
    """Each enabled rule of ``kind`` with an endpoint it covers (``rule_endpoints.sql``)."""
    return fetch_all(RULE_ENDPOINTS, {"kind": kind})


def budget_firings(
    kind: str, rules: Sequence[dict[str, Any]], statuses: Iterable[BudgetStatusLike]
) -> list[Firing]:
    """The budget rules of ``kind`` (``budget_warning``: 80 % spent, ``budget_exceeded``: 100 %)
    that ``statuses`` cross, one per rule and budget day. A rule narrowed to a queue hears
    about that queue's budget only; an endpoint's budget is heard by its rules on all queues.
    A budget crosses its share once the day spent that much and more than $0
    (``todos.limits.reached``): a $0 budget at the first priced call, never for $0 spent. Pure:
    ``summarised`` adds the summaries."""
    share = WARNING_SHARE if kind == RuleKind.BUDGET_WARNING else Decimal(1)
    found: list[Firing] = []
    for status in statuses:
        if not limits.reached(status.spent_usd, status.budget_usd, share):
            continue
        queue = status.queue if status.kind == "queue" else None
        for rule in rules:
            if rule["endpoint_id"] != status.endpoint_id:
                continue
            if rule["rule_queue"] is not None and rule["rule_queue"] != queue:
                continue
            subject = f"{status.kind}:{status.endpoint_id}:{queue or ''}:{status.day.isoformat()}"
            detail = {
                "budget": status.kind,
                "day": status.day.isoformat(),
                # Exact, both at the columns' scale (the spend's sum has 12 decimals, the
                # budget 6): "0.400000" beside "0.500000".
                "spent_usd": limits.usd_text(status.spent_usd),
                "budget_usd": limits.usd_text(status.budget_usd),
            }
            found.append(Firing(rule["rule_id"], subject, status.endpoint_id, queue, None, detail))
    return found


def unsuperseded(
    warnings: Sequence[Firing], exceeded: Sequence[Firing], rules: Iterable[dict[str, Any]]
) -> list[Firing]:
    """The budget warnings to open: those whose channel is not, in the same evaluation, told
    that the same budget day is exceeded. A budget that passes 100 % within one sweeper pass
    is one message (the exceeded one), not two; a warning already open stays open (it is only
    kept from opening). ``rules`` are both kinds' rule rows (``rule_endpoints``), for each
    rule's channel. Pure."""
    channel_of = {r["rule_id"]: r["channel_id"] for r in rules}
    over = {(channel_of.get(f.rule_id), f.subject) for f in exceeded}
    return [f for f in warnings if (channel_of.get(f.rule_id), f.subject) not in over]


def summarised(kind: str, firings: Iterable[Firing]) -> list[Firing]:
    found = list(firings)
    slugs = dict(
        Endpoint.objects.filter(id__in={f.endpoint_id for f in found}).values_list("id", "slug")
    )
    return [
        Firing(
            f.rule_id,
            f.subject,
            f.endpoint_id,
            f.queue,
            f.todo_id,
            f.detail,
            messages.summary(
                kind,
                endpoint=slugs.get(f.endpoint_id, str(f.endpoint_id)),
                queue=f.queue,
                todo_id=f.todo_id,
                detail=f.detail,
            ),
        )
        for f in found
    ]


def _plain(detail: Any) -> dict[str, Any]:
    """A detail as JSON would give it back (timestamps as text), whatever the driver decoded."""
    if isinstance(detail, str):
        value: dict[str, Any] = json.loads(detail)
        return value
    return json.loads(json.dumps(detail or {}, default=_default))


def _default(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, Decimal | UUID):
        return str(value)
    raise TypeError(type(value).__name__)
