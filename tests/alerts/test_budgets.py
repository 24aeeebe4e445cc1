"""Budget alerts over real HTTP: a budget that passes 100 % within one sweeper pass sends the
exceeded message alone (the warning is not opened), a warning already open stays open beside
it, and a channel that hears only warnings still gets its own."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from uuid import UUID

import pytest
from django.utils import timezone

from alerts import channels, evaluate, sources, sweep
from alerts.evaluate import Firing
from alerts.models import Alert, AlertChannel, RuleKind
from tests.alerts.conftest import Receiver
from tests.base import Personas

DAY = dt.date(2026, 12, 2)


@dataclass(frozen=True)
class Status:
    kind: str
    endpoint_id: UUID
    queue: str | None
    day: dt.date
    spent_usd: Decimal
    budget_usd: Decimal


class Budgets:
    """What ``sources.budget_statuses`` answers, set by the test between passes; counts reads."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.statuses: list[Status] = []
        self.reads = 0
        monkeypatch.setattr(sources, "budget_statuses", self.read)

    def read(self, *, now: dt.datetime) -> list[Status]:
        self.reads += 1
        return self.statuses

    def spent(self, endpoint_id: UUID, usd: str) -> None:
        self.statuses = [Status("queue", endpoint_id, "ci", DAY, Decimal(usd), Decimal("10"))]


def states(channel: AlertChannel) -> list[tuple[str, str]]:
    return [(a.kind, a.state) for a in Alert.objects.filter(channel=channel).order_by("id")]


def told(receiver: Receiver) -> list[tuple[str, str, str]]:
    """Each delivery the receiver counted: (channel id, message, kind)."""
    return [
        (b["alert"]["channel_id"], b["alert"]["message"], b["alert"]["kind"])
        for b in receiver.bodies()
    ]


def webhook(personas: Personas, receiver: Receiver, name: str) -> AlertChannel:
    channel, secret = channels.add_channel(personas.alice, webhook=receiver.url, name=name)
    assert secret is not None
    return channel


@pytest.mark.django_db(transaction=True)
def test_a_budget_past_100_percent_within_one_pass_sends_only_the_exceeded_alert(
    personas: Personas, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    channel = webhook(personas, receiver, "ops")
    budgets = Budgets(monkeypatch)
    budgets.spent(personas.endpoint_a.id, "5")  # 50 %: nothing
    sweep.run()
    assert receiver.received == [] and states(channel) == []

    budgets.spent(personas.endpoint_a.id, "12")  # 120 % at the next look
    reads = budgets.reads
    sweep.run()
    assert budgets.reads == reads + 1  # both budget kinds judged the same figures
    sweep.run()
    sweep.run()

    cid = str(channel.pk)
    assert told(receiver) == [(cid, "opened", "budget_exceeded")]
    assert states(channel) == [("budget_exceeded", "open")]  # the warning never opened

    budgets.statuses = []  # the next UTC day
    sweep.run()
    assert told(receiver) == [
        (cid, "opened", "budget_exceeded"),
        (cid, "resolved", "budget_exceeded"),
    ]
    assert states(channel) == [("budget_exceeded", "resolved")]


@pytest.mark.django_db(transaction=True)
def test_a_warning_opened_in_an_earlier_pass_stays_open_beside_the_exceeded_one(
    personas: Personas, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    channel = webhook(personas, receiver, "ops")
    budgets = Budgets(monkeypatch)
    budgets.spent(personas.endpoint_a.id, "8.5")
    sweep.run()
    budgets.spent(personas.endpoint_a.id, "10.5")
    sweep.run()
    sweep.run()

    cid = str(channel.pk)
    assert told(receiver) == [
        (cid, "opened", "budget_warning"),
        (cid, "opened", "budget_exceeded"),
    ]
    # Still 80 % spent: the warning is not resolved by the exceeded alert.
    assert states(channel) == [("budget_warning", "open"), ("budget_exceeded", "open")]

    budgets.statuses = []
    sweep.run()
    assert Counter(m for _, m, _ in told(receiver)) == {"opened": 2, "resolved": 2}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("day_over", [False, True])
def test_a_resolved_budget_alert_does_not_repeat_the_figures_it_opened_with(
    personas: Personas, receiver: Receiver, monkeypatch: pytest.MonkeyPatch, day_over: bool
) -> None:
    """A reprice lowering the day's spend, or a raised budget, resolves the alert: its message
    must not say the budget is still "100 % … spent ($12.00 of $10.00)"; nor at the day's end."""
    webhook(personas, receiver, "ops")
    budgets = Budgets(monkeypatch)
    day = DAY if day_over else timezone.now().astimezone(dt.UTC).date()
    ep = personas.endpoint_a.id
    budgets.statuses = [Status("queue", ep, "ci", day, Decimal("12"), Decimal("10"))]
    sweep.run()
    budgets.statuses = [Status("queue", ep, "ci", day, Decimal("0.5"), Decimal("10"))]
    sweep.run()
    [resolved] = [b["text"] for b in receiver.bodies() if b["alert"]["message"] == "resolved"]
    assert "$12" not in resolved and resolved.startswith("[resolved] Queue agent-a/ci: ")
    if day_over:
        assert resolved.endswith(f"100 % of its daily budget spent on {day}; that UTC day is over")
    else:
        assert resolved.endswith(f"its daily budget is no longer 100 % spent on {day}")


@pytest.mark.django_db(transaction=True)
def test_a_channel_without_the_exceeded_rule_still_hears_the_warning(
    personas: Personas, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    both = webhook(personas, receiver, "both")
    warned = webhook(personas, receiver, "warnings only")
    channels.remove_rule(warned.rules.get(kind=RuleKind.BUDGET_EXCEEDED))
    budgets = Budgets(monkeypatch)
    budgets.spent(personas.endpoint_a.id, "12")

    sweep.run()
    sweep.run()

    assert sorted(told(receiver)) == sorted(
        [
            (str(both.pk), "opened", "budget_exceeded"),
            (str(warned.pk), "opened", "budget_warning"),
        ]
    )
    assert states(both) == [("budget_exceeded", "open")]
    assert states(warned) == [("budget_warning", "open")]


def test_only_the_same_channels_exceeded_alert_on_the_same_subject_supersedes_a_warning() -> None:
    a, b = UUID(int=1), UUID(int=2)
    endpoint = UUID(int=9)
    rules = [
        {"rule_id": 1, "channel_id": a},  # a's warning
        {"rule_id": 2, "channel_id": a},  # a's exceeded
        {"rule_id": 3, "channel_id": b},  # b's warning
    ]

    def firing(rule_id: int, subject: str) -> Firing:
        return Firing(rule_id, subject, endpoint, None, None)

    warnings = [firing(1, "day-1"), firing(1, "day-2"), firing(3, "day-1")]
    exceeded = [firing(2, "day-1")]

    kept = evaluate.unsuperseded(warnings, exceeded, rules)

    assert [(f.rule_id, f.subject) for f in kept] == [(1, "day-2"), (3, "day-1")]
    assert evaluate.unsuperseded(warnings, [], rules) == warnings
