"""Where the alert evaluators' outside figures come from: the daily budgets.

The budgets (``todos/budgets.py``: ``BudgetStatus`` and ``budget_statuses(now=...)``) are the
cost app's, not this one's. ``BudgetStatusLike`` is the shape the budget evaluator reads
(``alerts/evaluate.py``); ``budget_statuses`` is the one place that fetches the list.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from typing import Protocol
from uuid import UUID

from todos import budgets


class BudgetStatusLike(Protocol):
    """A daily budget and what was spent against it (``todos.budgets.BudgetStatus``)."""

    @property
    def kind(self) -> str: ...  # "queue" or "endpoint"

    @property
    def endpoint_id(self) -> UUID: ...

    @property
    def queue(self) -> str | None: ...

    @property
    def day(self) -> dt.date: ...

    @property
    def spent_usd(self) -> Decimal: ...

    @property
    def budget_usd(self) -> Decimal: ...


def budget_statuses(*, now: dt.datetime) -> Sequence[BudgetStatusLike]:
    """The day's budgets and their spending (``todos.budgets.budget_statuses``)."""
    return budgets.budget_statuses(now=now)
