"""Daily budgets, read: what each set budget has spent today (``budget_statuses``), and the
queues an endpoint's budget pause covers.

A queue's daily budget is in its settings (``queue_settings.daily_budget_usd``, written by
``todos.lifecycle.set_queue_limits``), an endpoint's on its row (``endpoints.daily_budget_usd``).
What a day spent is the sum of its ``usage_hours`` (by the hour a call arrived, UTC), which
the OTLP ingest adds to after each batch (``otlp/sql/rollup.sql``). The sweeper pauses what is spent
(``todos/sweeps.py``, ``budgets``): a queue past its budget, or every queue of an endpoint
past its own, until the next UTC midnight or an operator's resume
(docs/decisions/0036-cost-and-budgets.md). The alerts read ``budget_statuses`` for their 80 %
and 100 % rules.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Literal

from switchboard.lib.sql import fetch_all, load
from todos import limits

_SQL = Path(__file__).parent / "sql"
BUDGET_STATUSES = load(_SQL, "budget_statuses")
ENDPOINT_QUEUES = load(_SQL, "endpoint_queues")


@dataclass(frozen=True)
class BudgetStatus:
    kind: Literal["queue", "endpoint"]
    endpoint_id: uuid.UUID
    queue: str | None  # None for an endpoint budget
    day: dt.date  # the UTC day
    spent_usd: Decimal
    budget_usd: Decimal

    @property
    def spent(self) -> bool:
        """At or past the budget, with something spent: the sweeper pauses it. A budget of $0
        allows no priced spend (the first call with a positive cost spends it); $0 spent never
        spends a budget, so a $0 budget does not pause its queues at midnight (as a todo's $0
        cap, ``todos/sql/over_cap.sql``)."""
        return limits.reached(self.spent_usd, self.budget_usd)

    @property
    def fraction(self) -> float:
        if self.budget_usd:
            return float(self.spent_usd / self.budget_usd)
        return 1.0 if self.spent_usd > 0 else 0.0


def day_start(now: dt.datetime) -> dt.datetime:
    """The UTC midnight that starts ``now``'s UTC day."""
    return now.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def budget_statuses(*, now: dt.datetime) -> list[BudgetStatus]:
    """Every daily budget that is set, with what ``now``'s UTC day has spent against it."""
    start = day_start(now)
    return [
        BudgetStatus(
            kind=r["kind"],
            endpoint_id=r["endpoint_id"],
            queue=r["queue"],
            day=start.date(),
            spent_usd=Decimal(r["spent_usd"]),
            budget_usd=Decimal(r["budget_usd"]),
        )
        for r in fetch_all(BUDGET_STATUSES, {"day_start": start})
    ]


def endpoint_queues(endpoint_id: uuid.UUID, *, now: dt.datetime) -> list[str]:
    """The queues an endpoint budget's pause covers: those with unfinished todos, settings or
    usage today."""
    rows = fetch_all(ENDPOINT_QUEUES, {"endpoint_id": endpoint_id, "day_start": day_start(now)})
    return [r["queue"] for r in rows]
