"""``manage.py prices load|show``, ``manage.py reprice --since``, ``manage.py enqueue
--max-cost-usd`` and ``manage.py queue set --daily-budget-usd``."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from otlp import prices
from otlp.models import Price, TodoSpan, UsageHour
from tests.base import Personas
from tests.otlp.helpers import claimed_with_trace, trace_id
from tests.otlp.test_usage import FIXTURES, fixture, send, specs
from todos.models import QueueSettings, Todo

HEADER = ",".join(prices.HEADER)


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_prices_load_then_show_round_trips_and_a_bad_file_changes_nothing(
    tmp_path: Path,
) -> None:
    good = tmp_path / "p.csv"
    good.write_text(f"# a comment\n{HEADER}\nacme-1*,acme,2025-03-01,1.5,2,,,\n")
    assert "1 added" in run("prices", "load", str(good))
    shown = run("prices", "show")
    assert "acme-1*,acme,2025-03-01,1.5,2,,," in shown
    again = tmp_path / "again.csv"
    again.write_text(shown)
    assert "replaced" in run("prices", "load", str(again))

    before = Price.objects.count()
    bad = tmp_path / "bad.csv"
    bad.write_text(f"{HEADER}\nok,,2025-01-01,1,1,,,\nneg,,2025-01-01,1,-2,,,\n")
    with pytest.raises(CommandError, match="line 3: output: a price cannot be negative"):
        run("prices", "load", str(bad))
    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes(f"{HEADER}\nmod\xe8le,,2025-01-01,1,1,,,\n".encode("latin-1"))
    with pytest.raises(CommandError, match="not UTF-8 text at byte"):
        run("prices", "load", str(latin1))
    assert Price.objects.count() == before


@pytest.mark.django_db
def test_the_admin_refuses_a_negative_price_and_an_overlapping_row() -> None:
    from django.core.exceptions import ValidationError

    Price.objects.create(model="m", effective_from="2025-01-01", input=1)
    with pytest.raises(ValidationError):
        Price(model="m", effective_from="2025-01-01", input=2).full_clean()
    with pytest.raises(ValidationError):
        Price(model="n", effective_from="2025-01-01", input=-1).full_clean()


@pytest.mark.django_db
def test_reprice_recomputes_span_costs_and_every_rollup_after_a_price_change(
    personas: Personas, tmp_path: Path
) -> None:
    prices.load(prices.parse((FIXTURES / "prices.csv").read_text()), "tests")
    trace = trace_id()
    claim = claimed_with_trace(personas.endpoint_a.id, trace)
    send(personas.endpoint_a.id, specs(fixture("openai_agents"), trace))
    assert Todo.objects.get(id=claim.todo.id).cost_usd == Decimal("0.01183")

    # gpt-4o's output doubles from 2025-10-01; o4-mini loses its price (unpriced from then).
    change = tmp_path / "change.csv"
    change.write_text(f"{HEADER}\ngpt-4o*,openai,2025-10-01,2.5,20,1.25,,20\n")
    run("prices", "load", str(change))
    Price.objects.filter(model="o4-mini*").delete()
    out = run("reprice", "--since", "2025-10-01")
    assert "Repriced 3 model calls (3 changed, 1 unpriced)" in out

    todo = Todo.objects.get(id=claim.todo.id)
    # chat1 0.00257 + 85*10/1e6, chat2 0.0031 + 120*10/1e6; chat3 unpriced (2900 tokens).
    assert todo.cost_usd == Decimal("0.00342") + Decimal("0.0043")
    assert todo.unpriced_tokens == 2900
    assert (
        TodoSpan.objects.filter(
            todo_id=claim.todo.id, cost_usd__isnull=True, input_tokens__gt=0
        ).count()
        == 1
    )
    assert UsageHour.objects.get(endpoint_id=personas.endpoint_a.id).cost_usd == todo.cost_usd


@pytest.mark.django_db
def test_reprice_rebuilds_the_hour_a_call_dated_ahead_arrived_in(personas: Personas) -> None:
    """A call counts in the hour it arrived; one dated after --since by a clock ahead arrived
    before it, and that hour is rebuilt too, so the day's total follows the new price."""
    prices.load(prices.parse((FIXTURES / "prices.csv").read_text()), "tests")
    trace = trace_id()
    claim = claimed_with_trace(personas.endpoint_a.id, trace)
    ahead = timezone.now() + dt.timedelta(days=2)
    send(
        personas.endpoint_a.id, specs(fixture("openai_agents"), trace, int(ahead.timestamp() * 1e9))
    )
    Price.objects.filter(model="o4-mini*").delete()

    since = (ahead - dt.timedelta(hours=1)).date().isoformat()
    assert "Repriced 3 model calls" in run("reprice", "--since", since)

    todo = Todo.objects.get(id=claim.todo.id)
    assert todo.unpriced_tokens == 2900
    [hour] = UsageHour.objects.filter(endpoint_id=personas.endpoint_a.id)
    assert (hour.cost_usd, hour.unpriced_tokens) == (todo.cost_usd, 2900)


@pytest.mark.django_db
def test_enqueue_and_queue_set_take_costs_and_refuse_bad_ones(personas: Personas) -> None:
    todo_id = run(
        "enqueue",
        "--endpoint",
        "agent-a",
        "--queue",
        "q",
        "--title",
        "t",
        "--max-cost-usd",
        "0.50",
    ).strip()
    assert Todo.objects.get(id=todo_id).max_cost_usd == Decimal("0.5")
    with pytest.raises(CommandError, match="max_cost_usd"):
        run(
            "enqueue",
            "--endpoint",
            "agent-a",
            "--queue",
            "q",
            "--title",
            "t",
            "--max-cost-usd",
            "-1",
        )
    out = run(
        "queue",
        "set",
        "--endpoint",
        "agent-a",
        "--queue",
        "q",
        "--daily-budget-usd",
        "20",
        "--max-cost-usd",
        "1",
    )
    assert "max_cost_usd $1.00, daily_budget_usd $20.00" in out
    settings = QueueSettings.objects.get(endpoint=personas.endpoint_a, queue="q")
    assert (settings.daily_budget_usd, settings.default_max_cost_usd) == (Decimal(20), Decimal(1))
    with pytest.raises(CommandError, match="--daily-budget-usd"):
        run("queue", "set", "--endpoint", "agent-a", "--queue", "q", "--daily-budget-usd", "x")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("cell", "why"),
    [
        ("NaN", "line 2: input: must be a finite number"),
        ("Infinity", "line 2: input: must be a finite number"),
        ("-Infinity", "line 2: input: must be a finite number"),
        ("0.0000001", "line 2: input: must have at most 6 decimals"),
        ("0.123456789", "line 2: input: must have at most 6 decimals"),
        ("\u0661", "line 2: input: not a number"),
        ("1_0", "line 2: input: not a number"),
    ],
)
def test_prices_load_refuses_what_is_no_price_naming_the_line_and_column(
    tmp_path: Path, cell: str, why: str
) -> None:
    """Never rounded or read as another script's digit: a price finer than the column's
    millionth would be stored as $0 (or another price), so the file is refused in one line."""
    bad = tmp_path / "bad.csv"
    bad.write_text(f"{HEADER}\nqa-bad,,2020-01-01,{cell},1,,,\n", encoding="utf-8")
    with pytest.raises(CommandError, match=f"^refused: {why}"):
        run("prices", "load", str(bad))
    assert not Price.objects.filter(model="qa-bad").exists()


def test_a_price_at_the_columns_scale_is_kept_exactly() -> None:
    assert prices.check_price(Decimal("0.000001"), "input") == Decimal("0.000001")
    assert prices.check_price(Decimal("1.500000000"), "input") == Decimal("1.5")
