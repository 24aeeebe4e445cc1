"""A cap or daily budget of $0 allows no priced spend: what reaches it is a call with a positive
cost, never $0 spent (todos/sql/over_cap.sql, otlp/sql/rollup.sql, todos/limits.py's reached).
A $0 cap dead-lettered every todo while it was still pending, and a $0 budget paused its queues
with nothing spent."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone

from attempts.models import TodoAttempt
from switchboard.lib.errors import TodoEnded
from switchboard.lib.text import money, money_sql
from tests.base import Personas
from tests.otlp.helpers import SpanSpec
from tests.otlp.test_budgets import chat, claim, test_prices  # noqa: F401 (a fixture)
from tests.otlp.test_usage import send
from todos import budgets, lifecycle, limits, sweeps
from todos.models import QueuePause, Todo


def unpriced(trace: bytes) -> SpanSpec:
    """A model call no price row covers: its tokens count as unpriced, its cost as none."""
    spec = chat(trace, 500)
    attributes = {**spec.attributes, "gen_ai.request.model": "no-such-model"}
    return SpanSpec(trace, name="chat no-such-model", start_ns=spec.start_ns, attributes=attributes)


@pytest.mark.django_db
def test_a_zero_cap_ends_a_todo_at_its_first_priced_call_not_before(
    personas: Personas,
    test_prices: None,  # noqa: F811
) -> None:
    endpoint = personas.endpoint_a.id
    waiting = lifecycle.create(endpoint, queue="q", max_cost_usd="0").id
    todo_id, trace = claim(endpoint, queue="held", max_cost_usd=0)

    report = sweeps.PassReport()
    sweeps.budgets_all(report)
    assert report.over_cap == []  # $0 spent is not past a $0 cap
    assert Todo.objects.get(id=waiting).state == "pending"

    send(endpoint, [unpriced(trace)])  # tokens nobody priced: no cost, still not over
    lifecycle.heartbeat(endpoint, todo_id, owner="agent")
    assert Todo.objects.get(id=todo_id).unpriced_tokens > 0

    send(endpoint, [chat(trace, 100)])  # $0.00125: the first priced spend ends it
    with pytest.raises(TodoEnded) as ended:
        lifecycle.heartbeat(endpoint, todo_id, owner="agent")
    assert ended.value.code == "budget_exceeded"
    assert ended.value.reason == "max_cost_usd $0.00 reached ($0.0013 spent)"
    attempt = TodoAttempt.objects.get(todo_id=todo_id, seq=1)
    assert attempt.summary == ended.value.reason
    assert Todo.objects.get(id=waiting).state == "pending"


@pytest.mark.django_db
def test_a_zero_daily_budget_pauses_at_the_first_priced_call_not_at_midnight(
    personas: Personas,
    test_prices: None,  # noqa: F811
) -> None:
    endpoint = personas.endpoint_a.id
    lifecycle.set_queue_limits(endpoint, "q", human_id=None, daily_budget_usd="0")
    personas.endpoint_a.daily_budget_usd = Decimal(0)
    personas.endpoint_a.save(update_fields=["daily_budget_usd"])
    _, trace = claim(endpoint)
    now = timezone.now()

    statuses = budgets.budget_statuses(now=now)
    assert [(s.kind, s.spent, s.fraction) for s in statuses] == [
        ("endpoint", False, 0.0),
        ("queue", False, 0.0),
    ]
    report = sweeps.PassReport()
    sweeps.budgets_all(report, now=now)
    assert report.budget_paused == []
    assert not QueuePause.objects.exists()

    send(endpoint, [chat(trace, 100)])
    assert all(s.spent and s.fraction == 1.0 for s in budgets.budget_statuses(now=now))
    spent = sweeps.PassReport()
    sweeps.budgets_all(spent, now=now)
    assert spent.budget_paused == [f"{endpoint}/q"]


def test_reached_is_the_statements_rule() -> None:
    assert not limits.reached(Decimal(0), Decimal(0))
    assert limits.reached(Decimal("0.000000000001"), Decimal(0))
    assert limits.reached(Decimal("0.5"), Decimal("0.5"))
    assert not limits.reached(Decimal("0.49"), Decimal("0.5"))
    assert limits.reached(Decimal("0.4"), Decimal("0.5"), Decimal("0.8"))


@pytest.mark.django_db
def test_money_sql_says_what_money_says() -> None:
    amounts = [
        "0",
        "0.000000",
        "0.000000000001",
        "0.00004",
        "0.00005",
        "0.0012",
        "0.00125",
        "0.005",
        "0.0099996",
        "0.01",
        "0.014999",
        "0.5",
        "1250.5",
        "999999.999999",
        "123456789012.999999999999",
    ]
    with connection.cursor() as cursor:
        for amount in amounts:
            cursor.execute(f"SELECT {money_sql('v.x')} FROM (SELECT %s::numeric AS x) v", [amount])
            assert cursor.fetchone()[0] == money(amount), amount
