"""Forget todos: erase what they held, everywhere, in one transaction, and leave tombstones.

A todo's content lives in three writers' tables: the lifecycle's (the todo, its attempts, its
activity rows, its search text, the delivery that created it: ``todos/sql/_forget_arms.sql``
says what goes and what stays), the OTLP store's (its spans and trace bindings) and the alerts'
(the title an alert about it quotes). This module runs them all in one transaction, so a todo is
never half forgotten, and is what every surface calls: ``manage.py forget``, the trail page's
Forget, the list's bulk Forget, django-admin's Forget action (``activity/admin.py``). The alerts
app sits above this module (it reads the todos it alerts about), so it registers its eraser here
(``register_eraser``, from ``alerts/apps.py``, as it registers its sweeper step with
``todos/sweeps.py``) rather than being imported.

Only finished todos are forgotten (an agent may still be working on an unfinished one: cancel it
first), only the human's own, and each once; the rest are left alone and the caller compares the
ids it asked for with those forgotten. Retention deletes whole todos later as it always did.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

from django.db import transaction

from otlp import store
from todos import lifecycle
from todos.filters import TodoFilters
from todos.limits import BULK_MAX
from todos.types import BulkResult

# The erasers of the apps above this module, by name: each is given the ids being forgotten,
# inside the forget's transaction, and erases what its own tables hold of them. One that raises
# undoes the whole forget.
type Eraser = Callable[[tuple[str, ...]], object]
_ERASERS: dict[str, Eraser] = {}


def register_eraser(name: str, eraser: Eraser) -> None:
    """Run ``eraser(ids)`` in every forget's transaction (once per name; a second call
    replaces)."""
    _ERASERS[name] = eraser


def _erase(forgotten: tuple[str, ...]) -> None:
    """Erase what the OTLP store and the registered apps hold of ``forgotten``."""
    if not forgotten:
        return
    store.forget(forgotten)
    for eraser in _ERASERS.values():
        eraser(forgotten)


def forget(
    human_id: int,
    todo_ids: Sequence[str],
    *,
    actor_id: int | None = None,
    by_system: bool = False,
) -> tuple[str, ...]:
    """Forget the human's finished todos among ``todo_ids``; the ids forgotten
    (``lifecycle.forget`` says who is recorded)."""
    with transaction.atomic():
        forgotten = lifecycle.forget(human_id, todo_ids, actor_id=actor_id, by_system=by_system)
        _erase(forgotten)
    return forgotten


def bulk_forget(
    human_id: int,
    filters: TodoFilters,
    *,
    seen_at: dt.datetime,
    limit: int = BULK_MAX,
    actor_id: int | None = None,
) -> BulkResult:
    """Forget the finished todos a Board filter selects (``lifecycle.bulk_forget``), spans,
    alerts and all."""
    with transaction.atomic():
        result = lifecycle.bulk_forget(
            human_id, filters, seen_at=seen_at, limit=limit, actor_id=actor_id
        )
        _erase(result.acted)
    return result
