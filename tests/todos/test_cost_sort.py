"""The todo list sorted by cost (the column the OTLP ingest keeps on the row): every todo once,
either way round, the cursor carrying the cost as text; a forged cost cursor starts over."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from switchboard.scope import Scope
from tests.base import Personas
from tests.todos.test_search import walk
from todos import lifecycle, queries
from todos.filters import Cursor
from todos.models import Todo
from todos.queries import TodoFilters

pytestmark = pytest.mark.django_db


def test_sorted_by_cost_every_todo_comes_once_either_way(personas: Personas) -> None:
    alice = Scope.of_human(personas.alice.id)
    costs = ["0.5", "0", "0.0123", "0.5", "12.25", "0"]
    made = []
    for cost in costs:
        todo = lifecycle.create(personas.endpoint_a.id, queue="q")
        Todo.objects.filter(id=todo.id).update(cost_usd=Decimal(cost))
        made.append(todo.id)
    todos = list(Todo.objects.filter(id__in=made))
    for descending in (False, True):
        expected = [
            t.id
            for t in sorted(
                todos, key=lambda t: (t.cost_usd, t.created_at, t.id), reverse=descending
            )
        ]
        assert walk(alice, TodoFilters(sort="-cost" if descending else "cost")) == expected
    page = queries.todo_page(alice, TodoFilters(sort="-cost"), size=1)
    assert page.todos[0].cost_usd == Decimal("12.25")


def test_a_cost_cursor_that_is_not_a_number_is_no_cursor() -> None:
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert Cursor.decode(Cursor(now, "td_x", "cost", "0.5").encode()) is not None
    for bad in ("abc", "NaN", "Infinity"):
        assert Cursor.decode(Cursor(now, "td_x", "cost", bad).encode()) is None
