"""Where the alert evaluators' outside figures come from: the daily budgets.

The budgets (``todos/budgets.py``: ``BudgetStatus`` and ``budget_statuses(now=...)``) are built
beside this app, not in it. ``BudgetStatusLike`` is the shape the budget evaluator reads
(``alerts/evaluate.py``); ``budget_statuses`` is the one place that fetches the list.
"""

from __future__ import annotations

import datetime as dt
import importlib
from collections.abc import Sequence
from decimal import Decimal
from typing import Protocol
from uuid import UUID


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
    """The day's budgets and their spending, from ``todos.budgets`` when it is installed; none
    before it is.

    LEAD: wire here. Once ``todos/budgets.py`` lands this is the single call site; replace the
    import by name with ``from todos import budgets`` and
    ``return budgets.budget_statuses(now=now)`` (``todos.budgets`` sits below ``alerts.sources``
    in pyproject's layers already, as every ``todos`` module does).
    """
    try:
        budgets = importlib.import_module("todos.budgets")
    except ModuleNotFoundError:
        return []
    statuses: Sequence[BudgetStatusLike] = budgets.budget_statuses(now=now)
    return statuses
