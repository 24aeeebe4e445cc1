"""Budgets that stop work: a todo's max_cost_usd (todos/sql/over_cap.sql) and the daily budgets
of queues and endpoints (todos/budgets.py, the sweeper's budgets step)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from attempts.models import TodoAttempt
from otlp import prices
from switchboard.lib.errors import InvalidInput, TodoEnded
from tests.base import Personas
from tests.otlp.helpers import SpanSpec, trace_id
from tests.otlp.test_usage import FIXTURES, send
from todos import budgets, lifecycle, sweeps
from todos.models import QueuePause, Todo
from todos.types import QueueEmpty


@pytest.fixture
def test_prices(db: None) -> None:
    prices.load(prices.parse((FIXTURES / "prices.csv").read_text()), "tests")


def chat(trace: bytes, output_tokens: int, start: dt.datetime | None = None) -> SpanSpec:
    """A gpt-4o call costing output_tokens x $10 per million (plus 100 input at $2.5)."""
    start = start or timezone.now()
    return SpanSpec(
        trace,
        name="chat gpt-4o",
        start_ns=int(start.timestamp() * 1e9),
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": 100,
            "gen_ai.usage.output_tokens": output_tokens,
        },
    )


def claim(endpoint_id: object, queue: str = "q", **create: object) -> tuple[str, bytes]:
    trace = trace_id()
    lifecycle.create(endpoint_id, queue=queue, **create)  # type: ignore[arg-type]
    got = lifecycle.claim_next(endpoint_id, [queue], owner="agent", trace_id=trace)  # type: ignore[arg-type]
    assert got is not None
    return got.todo.id, trace


@pytest.mark.django_db
def test_a_todo_past_its_cap_gets_budget_exceeded_on_its_next_heartbeat(
    personas: Personas, test_prices: None
) -> None:
    endpoint = personas.endpoint_a.id
    todo_id, trace = claim(endpoint, max_cost_usd="0.01", max_attempts=3)
    send(endpoint, [chat(trace, 500)])  # $0.00525: under the cap
    lifecycle.heartbeat(endpoint, todo_id, owner="agent")

    send(endpoint, [chat(trace, 600)])  # $0.00625 more: $0.0115, past $0.01
    with pytest.raises(TodoEnded) as ended:
        lifecycle.heartbeat(endpoint, todo_id, owner="agent")
    assert ended.value.code == "budget_exceeded"
    assert ended.value.by == "sweeper"
    assert "max_cost_usd" in (ended.value.reason or "")
    todo = Todo.objects.get(id=todo_id)
    assert todo.state == "failed" and todo.next_retry_at is None  # dead-lettered, no retry
    assert todo.cost_usd == Decimal("0.0115")
    attempt = TodoAttempt.objects.get(todo_id=todo_id, seq=1)
    assert (attempt.outcome, attempt.disposition) == ("budget_exceeded", "dead_lettered")
    # A report answers the same.
    with pytest.raises(TodoEnded):
        lifecycle.complete(endpoint, todo_id, owner="agent")


@pytest.mark.django_db
def test_the_queue_default_cap_applies_and_the_sweep_catches_what_the_ingest_missed(
    personas: Personas, test_prices: None
) -> None:
    endpoint = personas.endpoint_a.id
    lifecycle.set_queue_limits(endpoint, "capped", human_id=None, default_max_cost_usd="0.001")
    todo_id, _ = claim(endpoint, queue="capped")
    assert Todo.objects.get(id=todo_id).max_cost_usd == Decimal("0.001")
    own_id, _ = claim(endpoint, queue="capped", max_cost_usd="5")
    assert Todo.objects.get(id=own_id).max_cost_usd == Decimal(5)
    # Cost written past the ingest (a lost rollup repaired by reprice, say): the sweep ends it.
    Todo.objects.filter(id=todo_id).update(cost_usd=Decimal("0.002"))
    report = sweeps.PassReport()
    sweeps.budgets_all(report)
    assert report.over_cap == [todo_id]


@pytest.mark.django_db
def test_a_cap_refuses_bad_input(personas: Personas) -> None:
    for bad in ("-1", "abc", "0.0000001", True, "1e9"):
        with pytest.raises(InvalidInput, match="max_cost_usd"):
            lifecycle.create(personas.endpoint_a.id, queue="q", max_cost_usd=bad)  # type: ignore[arg-type]


@pytest.mark.django_db
def test_a_queue_past_its_daily_budget_pauses_until_the_next_utc_day_or_a_resume(
    personas: Personas, test_prices: None
) -> None:
    endpoint = personas.endpoint_a.id
    lifecycle.set_queue_limits(endpoint, "q", human_id=None, daily_budget_usd="0.01")
    _, trace = claim(endpoint)
    now = timezone.now()
    send(endpoint, [chat(trace, 1200)])  # $0.01225

    [status] = budgets.budget_statuses(now=now)
    assert (status.kind, status.queue, status.day) == ("queue", "q", now.astimezone(dt.UTC).date())
    assert status.spent_usd == Decimal("0.01225") and status.budget_usd == Decimal("0.01")

    report = sweeps.PassReport()
    sweeps.budgets_all(report, now=now)
    assert report.budget_paused == [f"{endpoint}/q"]
    pause = QueuePause.objects.get(endpoint_id=endpoint, resumed_at__isnull=True)
    assert pause.reason == "queue_budget"
    assert pause.until == budgets.day_start(now) + dt.timedelta(days=1)
    lifecycle.create(endpoint, queue="q")
    assert lifecycle.claim_next(endpoint, ["q"], owner="agent") is None

    # An operator's resume holds for the day: the next pass does not pause it again.
    lifecycle.resume_queue(endpoint, "q", human_id=None)
    again = sweeps.PassReport()
    sweeps.budgets_all(again, now=now)
    assert again.budget_paused == []

    # Next UTC day: a pause whose `until` passed is lifted.
    lifecycle.pause_for_budget(
        [(endpoint, "q")],
        reason="queue_budget",
        day_start=budgets.day_start(now) + dt.timedelta(days=1),
    )
    QueuePause.objects.filter(resumed_at__isnull=True).update(until=now - dt.timedelta(seconds=1))
    lifted = sweeps.PassReport()
    sweeps.budgets_all(lifted, now=now)
    assert lifted.pauses_lifted == [f"{endpoint}/q"]


@pytest.mark.django_db
@pytest.mark.parametrize("dated", [dt.timedelta(days=-3), dt.timedelta(days=2)])
def test_a_span_dated_another_day_spends_the_day_it_arrives(
    personas: Personas, test_prices: None, dated: dt.timedelta
) -> None:
    """A day's budget counts what arrived that day: a call dated days back (a late exporter,
    a clock behind) or ahead was charged to its start's hour and escaped today's budget."""
    endpoint = personas.endpoint_a.id
    lifecycle.set_queue_limits(endpoint, "q", human_id=None, daily_budget_usd="0.01")
    _, trace = claim(endpoint)
    now = timezone.now()
    send(endpoint, [chat(trace, 1200, start=now + dated)])  # $0.01225

    [status] = budgets.budget_statuses(now=now)
    assert status.spent_usd == Decimal("0.01225")
    report = sweeps.PassReport()
    sweeps.budgets_all(report, now=now)
    assert report.budget_paused == [f"{endpoint}/q"]


@pytest.mark.django_db
def test_an_endpoint_past_its_daily_budget_pauses_every_queue_of_it(
    personas: Personas, test_prices: None
) -> None:
    endpoint = personas.endpoint_a.id
    personas.endpoint_a.daily_budget_usd = Decimal("0.005")
    personas.endpoint_a.save(update_fields=["daily_budget_usd"])
    _, trace = claim(endpoint, queue="one")
    lifecycle.create(endpoint, queue="two")
    send(endpoint, [chat(trace, 600)])  # $0.00625
    report = sweeps.PassReport()
    sweeps.budgets_all(report)
    assert sorted(report.budget_paused) == [f"{endpoint}/one", f"{endpoint}/two"]
    assert budgets.budget_statuses(now=timezone.now())[0].kind == "endpoint"


def _endpoint_budget(personas: Personas, amount: str | None) -> None:
    personas.endpoint_a.daily_budget_usd = None if amount is None else Decimal(amount)
    personas.endpoint_a.save(update_fields=["daily_budget_usd"])


def _open_pause(endpoint: object, queue: str) -> QueuePause | None:
    return QueuePause.objects.filter(
        endpoint_id=endpoint, queue=queue, resumed_at__isnull=True
    ).first()


@pytest.mark.django_db
def test_an_endpoint_budget_pauses_a_queue_its_work_reaches_after_the_others_were_paused(
    personas: Personas, test_prices: None
) -> None:
    """Work routed to a new queue after the endpoint's budget paused the others (submit_todo,
    a rule, A2A, a schedule) is paused at the next pass; an operator's resume of one queue
    still holds for the day, whichever sweeper (or restart) runs the pass."""
    endpoint = personas.endpoint_a.id
    _endpoint_budget(personas, "0.005")
    _, trace = claim(endpoint, queue="one")
    lifecycle.create(endpoint, queue="two")
    send(endpoint, [chat(trace, 600)])  # $0.00625
    now = timezone.now()
    first = sweeps.PassReport()
    sweeps.budgets_all(first, now=now)
    assert sorted(first.budget_paused) == [f"{endpoint}/one", f"{endpoint}/two"]
    lifecycle.resume_queue(endpoint, "two", human_id=personas.alice.id)

    lifecycle.create(endpoint, queue="three")
    later = sweeps.PassReport()
    sweeps.budgets_all(later, now=now)
    assert later.budget_paused == [f"{endpoint}/three"]
    pause = _open_pause(endpoint, "three")
    assert pause is not None and pause.reason == "endpoint_budget"
    assert lifecycle.claim_next(endpoint, ["three"], owner="agent") is None
    # The operator's resume of "two" holds; nothing is paused twice.
    assert _open_pause(endpoint, "two") is None
    again = sweeps.PassReport()
    sweeps.budgets_all(again, now=now)
    assert again.budget_paused == [] and again.pauses_lifted == []


@pytest.mark.django_db
def test_a_budget_pause_lifts_once_its_budget_is_no_longer_spent(
    personas: Personas, test_prices: None
) -> None:
    """Raised or cleared (or a reprice lowering the day's spend), a budget no longer spent
    lets its queues go at the next pass, by the sweeper, as the midnight lift does; spent
    again, they are paused again (the sweeper's lift is not an operator's resume)."""
    endpoint = personas.endpoint_a.id
    lifecycle.set_queue_limits(endpoint, "q", human_id=None, daily_budget_usd="0.01")
    _, trace = claim(endpoint)
    send(endpoint, [chat(trace, 1200)])  # $0.01225
    now = timezone.now()
    sweeps.budgets_all(sweeps.PassReport(), now=now)
    assert _open_pause(endpoint, "q") is not None

    lifecycle.set_queue_limits(endpoint, "q", human_id=None, daily_budget_usd="0.05")
    raised = sweeps.PassReport()
    sweeps.budgets_all(raised, now=now)
    assert raised.pauses_lifted == [f"{endpoint}/q"] and raised.budget_paused == []
    lifted = QueuePause.objects.get(endpoint_id=endpoint, queue="q")
    assert (lifted.resumed_by_kind, lifted.resumed_by) == ("system", "sweeper")
    lifecycle.create(endpoint, queue="q")
    assert lifecycle.claim_next(endpoint, ["q"], owner="agent") is not None

    lifecycle.set_queue_limits(endpoint, "q", human_id=None, daily_budget_usd="0.01")
    spent_again = sweeps.PassReport()
    sweeps.budgets_all(spent_again, now=now)
    assert spent_again.budget_paused == [f"{endpoint}/q"]

    lifecycle.set_queue_limits(endpoint, "q", human_id=None, daily_budget_usd=None)
    cleared = sweeps.PassReport()
    sweeps.budgets_all(cleared, now=now)
    assert cleared.pauses_lifted == [f"{endpoint}/q"]
    assert _open_pause(endpoint, "q") is None


@pytest.mark.django_db
def test_a_pause_the_other_budget_still_covers_stays_and_says_which(
    personas: Personas, test_prices: None
) -> None:
    """A queue past both its own budget and its endpoint's: the endpoint's cleared, the queue
    stays paused, for its own budget now (what the Board says of it stays true)."""
    endpoint = personas.endpoint_a.id
    _endpoint_budget(personas, "0.005")
    lifecycle.set_queue_limits(endpoint, "q", human_id=None, daily_budget_usd="0.005")
    _, trace = claim(endpoint)
    send(endpoint, [chat(trace, 1200)])  # $0.01225: past both
    sweeps.budgets_all(sweeps.PassReport())
    pause = _open_pause(endpoint, "q")
    assert pause is not None and pause.reason == "endpoint_budget"  # the first read

    _endpoint_budget(personas, None)
    kept = sweeps.PassReport()
    sweeps.budgets_all(kept)
    assert kept.pauses_lifted == [] and kept.budget_paused == []
    pause = _open_pause(endpoint, "q")
    assert pause is not None and pause.reason == "queue_budget"

    lifecycle.set_queue_limits(endpoint, "q", human_id=None, daily_budget_usd=None)
    lifted = sweeps.PassReport()
    sweeps.budgets_all(lifted)
    assert lifted.pauses_lifted == [f"{endpoint}/q"]


@pytest.mark.django_db
def test_claim_next_on_a_budget_paused_queue_says_so_and_until_when(
    personas: Personas, test_prices: None
) -> None:
    endpoint = personas.endpoint_a.id
    lifecycle.set_queue_limits(endpoint, "q", human_id=None, daily_budget_usd="0.01")
    _, trace = claim(endpoint)
    send(endpoint, [chat(trace, 1200)])  # $0.01225
    now = timezone.now()
    sweeps.budgets_all(sweeps.PassReport(), now=now)
    lifecycle.create(endpoint, queue="q")
    lifecycle.create(endpoint, queue="held")
    lifecycle.pause_queue(endpoint, "held", human_id=None)
    why = lifecycle.claim_next_or_why(endpoint, ["q", "held"], owner="agent")
    midnight = budgets.day_start(now) + dt.timedelta(days=1)
    assert why == (
        QueueEmpty("q", "paused", at=midnight, paused_by="queue_budget"),
        QueueEmpty("held", "paused", paused_by="operator"),
    )
