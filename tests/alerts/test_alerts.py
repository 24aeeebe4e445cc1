"""Alerts end to end over real HTTP: a dead letter told once and never resolved, a condition
opened after its T and resolved when it clears, a failing channel never blocking a sweep, the
SSRF guard at save, budgets from constructed statuses, email, the command and the bell."""

from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass
from decimal import Decimal
from io import StringIO
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from django.core import mail
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from alerts import channels, deliver, evaluate, messages, sources, sweep
from alerts.models import Alert, AlertChannel, AlertDelivery, RuleKind
from switchboard import runtime_settings
from switchboard.lib.errors import InvalidInput
from switchboard.lib.sql import fetch_all
from switchboard.scope import Scope
from tests.alerts.conftest import Receiver, standard_webhooks_valid
from tests.alerts.helpers import dead_letter, webhook
from tests.base import Personas
from tests.reach import claimed, new_todo
from todos import lifecycle, sweeps

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "alerts.md"


def documented_verify() -> Any:
    """The receiver's check the guide tells readers to copy, run as written."""
    block = re.search(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert block is not None, "docs/guides/alerts.md lost its verifier"
    namespace: dict[str, Any] = {}
    exec(block.group(1), namespace)  # noqa: S102 (our own documentation)
    return namespace["verify"]


def states(channel: AlertChannel) -> list[tuple[str, str]]:
    return [(a.kind, a.state) for a in Alert.objects.filter(channel=channel).order_by("id")]


def messages_of(channel: AlertChannel) -> list[tuple[str, str]]:
    rows = AlertDelivery.objects.filter(channel=channel).order_by("id")
    return [(d.message, d.state) for d in rows]


@pytest.mark.django_db(transaction=True)
def test_a_dead_letter_sends_one_signed_alert_and_its_resolution_none(
    personas: Personas, receiver: Receiver
) -> None:
    channel = webhook(personas, receiver)
    todo_id = dead_letter(personas.endpoint_a.id)
    dead_letter(personas.endpoint_b.id)  # bob's: alice's channel never hears of it

    sweeps.run_pass()
    sweeps.run_pass()
    sweeps.run_pass()

    assert receiver.verified == [True]
    ((headers, body),) = receiver.received
    assert not standard_webhooks_valid(receiver.secret, headers, body + b" ")
    verify = documented_verify()
    assert verify(receiver.secret, headers, body)
    assert not verify(receiver.secret, headers, body + b" ")
    assert not verify(channels.routing.new_standard_secret(), headers, body)
    (sent,) = receiver.bodies()
    assert todo_id in sent["text"] and "agent-a/triage" in sent["text"]
    alert = sent["alert"]
    assert alert["kind"] == "dead_letter" and alert["state"] == "event"
    assert (alert["todo_id"], alert["queue"], alert["endpoint"]) == (todo_id, "triage", "agent-a")
    assert alert["message"] == "opened" and alert["message_id"] == headers["webhook-id"]
    assert states(channel) == [("dead_letter", "event")]
    assert messages_of(channel) == [("opened", "delivered")]


@pytest.mark.django_db(transaction=True)
def test_a_missed_deadline_is_the_deadline_rules_alone(
    personas: Personas, receiver: Receiver
) -> None:
    channel = webhook(personas, receiver)
    soon = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
    todo = new_todo(personas.endpoint_a.id, "triage", start_by=soon)
    fetch_all(
        "UPDATE todos SET start_by = now() - interval '1 second' WHERE id = %(id)s RETURNING id",
        {"id": todo.id},
    )

    report = sweeps.run_pass()
    sweeps.run_pass()

    assert report.deadlines == [todo.id]
    assert states(channel) == [("deadline_missed", "event")]
    (sent,) = receiver.bodies()
    assert "missed its start_by" in sent["text"] and receiver.verified == [True]


@pytest.mark.django_db(transaction=True)
def test_a_depth_alert_opens_after_its_time_and_resolves_when_it_clears(
    personas: Personas, receiver: Receiver
) -> None:
    channel = webhook(personas, receiver)
    channels.add_rule(channel, RuleKind.DEPTH, queue="triage", threshold=1, for_seconds=60)
    todos = [new_todo(personas.endpoint_a.id, "triage").id for _ in range(2)]

    sweep.run()
    assert states(channel) == [("depth", "pending")] and receiver.received == []
    sweep.run()  # not for 60 s yet: still pending, one row (no storm)
    assert states(channel) == [("depth", "pending")]
    fetch_all("UPDATE alerts SET since = now() - interval '61 seconds' RETURNING id", {})
    sweep.run()
    sweep.run()
    assert states(channel) == [("depth", "open")]

    lifecycle.cancel(Scope.of_human(personas.alice.pk), todos[0], reason="enough")
    sweep.run()
    sweep.run()

    assert states(channel) == [("depth", "resolved")]
    assert [(b["alert"]["message"], b["alert"]["kind"]) for b in receiver.bodies()] == [
        ("opened", "depth"),
        ("resolved", "depth"),
    ]
    assert receiver.verified == [True, True]


@pytest.mark.django_db(transaction=True)
def test_a_channel_that_times_out_or_fails_never_blocks_a_sweep(
    personas: Personas, receiver: Receiver
) -> None:
    runtime_settings.put("push_timeout_seconds", 1)
    runtime_settings.put("push_breaker_failures", 2)
    runtime_settings.clear_cache()
    channel = webhook(personas, receiver)
    receiver.delay = 3.0  # longer than the timeout
    dead_letter(personas.endpoint_a.id)
    dead_letter(personas.endpoint_a.id)

    started = time.monotonic()
    report = sweep.run()
    assert time.monotonic() - started < 2.8
    assert report.sent is not None and report.sent.failed == 1 and report.sent.handed_back == 1
    assert sorted(messages_of(channel)) == [("opened", "queued"), ("opened", "queued")]

    receiver.delay, receiver.status = 0.0, 503
    fetch_all("UPDATE alert_deliveries SET next_try_at = now() RETURNING id", {})
    report = sweep.run()
    assert report.sent is not None and str(channel.pk) in report.sent.opened
    fetch_all("UPDATE alert_deliveries SET next_try_at = now() RETURNING id", {})
    before = len(receiver.received)
    sweep.run()  # the breaker is open: nothing is sent, a test included
    assert len(receiver.received) == before
    assert channels.queue_test(channel).outcome == "breaker_open"  # the Board's button
    receiver.status = 204
    queued = channels.queue_test(channel, guarded=False)  # manage.py alert test's: sent now
    assert queued.delivery_id is not None
    report = deliver.send_due(only=queued.delivery_id)
    assert report.delivered == 1
    assert receiver.bodies()[-1]["alert"]["message"] == "test"


@pytest.mark.django_db
def test_a_private_webhook_is_refused_at_save_unless_the_push_setting_allows_it(
    personas: Personas,
) -> None:
    for url in ("http://127.0.0.1/hook", "http://10.0.0.8/x", "http://[::1]/x", "ftp://a.b/"):
        with pytest.raises(InvalidInput, match="url"):
            channels.add_channel(personas.alice, webhook=url, allow_private=False)
    channel, _ = channels.add_channel(
        personas.alice, webhook="http://127.0.0.1/hook", allow_private=True
    )
    with pytest.raises(InvalidInput, match="url"):
        channels.update_channel(channel, url="http://169.254.169.254/", allow_private=False)
    with pytest.raises(InvalidInput, match="email"):
        channels.add_channel(personas.alice, email="not an address")
    with pytest.raises(InvalidInput, match="channel"):
        channels.add_channel(personas.alice)
    assert AlertChannel.objects.count() == 1


@pytest.mark.django_db
def test_a_new_channel_carries_the_default_rules_until_narrowed(personas: Personas) -> None:
    channel, secret = channels.add_channel(personas.alice, email="ops@example.com")
    assert secret is None
    assert sorted(r.kind for r in channel.rules.all()) == sorted(
        ["dead_letter", "deadline_missed", "budget_warning", "budget_exceeded"]
    )
    assert all(r.endpoint_id is None and r.queue is None for r in channel.rules.all())
    with pytest.raises(InvalidInput, match="endpoint"):
        channels.narrow(channel, RuleKind.DEAD_LETTER, endpoint=personas.endpoint_b)
    channels.narrow(channel, RuleKind.DEAD_LETTER, endpoint=personas.endpoint_a, queue="ci")
    rule = channel.rules.get(kind="dead_letter")
    assert (rule.endpoint_id, rule.queue) == (personas.endpoint_a.id, "ci")
    with pytest.raises(InvalidInput, match="threshold"):
        channels.add_rule(channel, RuleKind.DEPTH, for_seconds=60)
    with pytest.raises(InvalidInput, match="for_seconds"):
        channels.add_rule(channel, RuleKind.SILENT_CLAIM)


@dataclass(frozen=True)
class Status:
    kind: str
    endpoint_id: UUID
    queue: str | None
    day: dt.date
    spent_usd: Decimal
    budget_usd: Decimal


def test_budget_rules_fire_at_80_and_100_percent_from_constructed_statuses() -> None:
    a, b = UUID(int=1), UUID(int=2)
    day = dt.date(2026, 12, 2)
    rules = [
        {"rule_id": 1, "endpoint_id": a, "rule_queue": None},
        {"rule_id": 2, "endpoint_id": a, "rule_queue": "ci"},
    ]
    statuses = [
        Status("queue", a, "ci", day, Decimal("8.00"), Decimal("10")),
        Status("queue", a, "docs", day, Decimal("7.99"), Decimal("10")),
        Status("endpoint", a, None, day, Decimal("50"), Decimal("50")),
        Status("queue", b, "ci", day, Decimal("99"), Decimal("10")),  # no rule covers b
        # A $0 budget allows no priced spend: any spend is past it, none never is.
        Status("queue", a, "zero", day, Decimal("0.000001"), Decimal("0")),
        Status("queue", a, "idle", day, Decimal("0"), Decimal("0")),
    ]

    def fired(kind: str) -> list[tuple[int, str]]:
        return sorted(
            (f.rule_id, f.subject) for f in evaluate.budget_firings(kind, rules, statuses)
        )

    assert fired("budget_warning") == [
        (1, f"endpoint:{a}::2026-12-02"),
        (1, f"queue:{a}:ci:2026-12-02"),
        (1, f"queue:{a}:zero:2026-12-02"),
        (2, f"queue:{a}:ci:2026-12-02"),
    ]
    assert fired("budget_exceeded") == [
        (1, f"endpoint:{a}::2026-12-02"),
        (1, f"queue:{a}:zero:2026-12-02"),
    ]


def test_a_budget_alert_says_its_sums_as_money() -> None:
    # The detail keeps the exact figures PostgreSQL summed, as text at the columns' scale (6
    # decimals, both; finer only when the sum is); the line reads as money.
    day = dt.date(2026, 12, 6)
    spent = Status("queue", UUID(int=1), "budgetq", day, Decimal("0.144000000000"), Decimal("0.1"))
    rules = [{"rule_id": 1, "endpoint_id": UUID(int=1), "rule_queue": None}]
    [firing] = evaluate.budget_firings("budget_exceeded", rules, [spent])
    line = messages.summary(
        "budget_exceeded",
        endpoint="demo-agent",
        queue="budgetq",
        todo_id=None,
        detail=firing.detail,
    )
    assert (firing.detail["spent_usd"], firing.detail["budget_usd"]) == ("0.144000", "0.100000")
    tiny = Status("queue", UUID(int=1), "budgetq", day, Decimal("0.000000050000"), Decimal(0))
    [firing] = evaluate.budget_firings("budget_exceeded", rules, [tiny])
    assert (firing.detail["spent_usd"], firing.detail["budget_usd"]) == ("0.00000005", "0.000000")
    assert line == (
        "Queue demo-agent/budgetq: 100 % of its daily budget spent on 2026-12-06 ($0.14 of $0.10)"
    )
    # Cents from a cent up; below, up to four decimals and no trailing zeros.
    assert [
        messages.money(text)
        for text in ("1250.5", "0.010000", "0", "0.005000", "0.00123", "0.0099996", "0.00004")
    ] == ["$1,250.50", "$0.01", "$0.00", "$0.005", "$0.0012", "$0.01", "<$0.0001"]


@pytest.mark.django_db(transaction=True)
def test_a_budget_alerts_once_and_resolves_on_the_next_day(
    personas: Personas, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    channel = webhook(personas, receiver)
    day = dt.date(2026, 12, 2)
    over = [Status("queue", personas.endpoint_a.id, "ci", day, Decimal("12"), Decimal("10"))]
    monkeypatch.setattr(sources, "budget_statuses", lambda *, now: over)

    sweep.run()
    sweep.run()
    # Past 100 % at the first look: the exceeded alert alone (tests/alerts/test_budgets.py).
    assert states(channel) == [("budget_exceeded", "open")]
    assert len(receiver.received) == 1 and receiver.verified == [True]
    assert "100 % of its daily budget" in receiver.bodies()[0]["text"]

    over = []
    sweep.run()
    assert states(channel) == [("budget_exceeded", "resolved")]
    assert len(receiver.received) == 2


@pytest.mark.django_db(transaction=True)
def test_silent_claims_oldest_pending_and_a_push_breaker(personas: Personas) -> None:
    channel, _ = channels.add_channel(personas.alice, email="ops@example.com")
    channels.add_rule(channel, RuleKind.SILENT_CLAIM, for_seconds=60)
    channels.add_rule(channel, RuleKind.OLDEST_PENDING, queue="q", for_seconds=300)
    channels.add_rule(channel, RuleKind.PUSH_BREAKER)
    held = claimed(personas.endpoint_a.id, "q")
    waiting = new_todo(personas.endpoint_a.id, "q")
    fetch_all(
        "UPDATE todos SET attempt_heartbeat_at = now() - interval '2 minutes',"
        " claimed_at = now() - interval '2 minutes' WHERE id = %(id)s RETURNING id",
        {"id": held.todo.id},
    )
    fetch_all(
        "UPDATE todos SET created_at = now() - interval '10 minutes' WHERE id = %(id)s"
        " RETURNING id",
        {"id": waiting.id},
    )
    fetch_all(
        "INSERT INTO push_circuits (endpoint_id, failures, open_until)"
        " VALUES (%(e)s, 5, now() + interval '1 minute') RETURNING endpoint_id",
        {"e": personas.endpoint_a.id},
    )

    sweep.run()

    assert sorted(states(channel)) == [
        ("oldest_pending", "open"),
        ("push_breaker", "open"),
        ("silent_claim", "open"),
    ]
    assert len(mail.outbox) == 3
    subjects = " | ".join(m.subject for m in mail.outbox)
    assert f"Todo {held.todo.id} on agent-a/q: claimed, no heartbeat for 1m" in subjects
    assert f"todo {waiting.id} has waited more than 5m" in subjects
    assert mail.outbox[0].to == ["ops@example.com"]

    lifecycle.heartbeat(personas.endpoint_a.id, held.todo.id, owner="worker-1")
    fetch_all("UPDATE push_circuits SET open_until = NULL, failures = 0 RETURNING 1", {})
    sweep.run()
    assert sorted(states(channel)) == [
        ("oldest_pending", "open"),
        ("push_breaker", "resolved"),
        ("silent_claim", "resolved"),
    ]
    assert len(mail.outbox) == 5

    # A paused queue's todos are not claimable: what makes them wait is the pause, not a late
    # agent, so the alert resolves (the guide's "oldest claimable pending todo").
    lifecycle.pause_queue(personas.endpoint_a.id, "q", human_id=personas.alice.id)
    sweep.run()
    assert ("oldest_pending", "resolved") in states(channel)


@pytest.mark.django_db(transaction=True)
def test_the_command_adds_a_channel_prints_its_secret_once_and_sends_a_test(
    personas: Personas, receiver: Receiver
) -> None:
    out = StringIO()
    call_command(
        "alert", "channel", "add", "--owner", "alice", "--webhook", receiver.url, stdout=out
    )
    lines = out.getvalue().splitlines()
    channel_id = lines[0].removeprefix("channel: ")
    receiver.secret = lines[1].removeprefix("signing secret (shown once): ")
    assert AlertChannel.objects.get(id=channel_id).secret == receiver.secret

    out = StringIO()
    call_command("alert", "test", channel_id, stdout=out)

    assert out.getvalue().startswith("delivered (HTTP 204)")
    assert receiver.verified == [True]
    assert receiver.bodies()[0]["alert"]["message"] == "test"
    with pytest.raises(CommandError, match="no channel"):
        call_command("alert", "test", str(UUID(int=7)))
    with pytest.raises(CommandError, match="refused: url"):
        call_command(
            "alert", "channel", "add", "--owner", "alice", "--webhook", "gopher://x", stdout=out
        )

    # A new secret, printed once: the receiver that still has the old one refuses what follows.
    out = StringIO()
    call_command("alert", "channel", "rotate", channel_id, stdout=out)
    rotated = out.getvalue().splitlines()[0].split("(shown once): ")[1]
    assert rotated != receiver.secret
    assert AlertChannel.objects.get(id=channel_id).secret == rotated
    call_command("alert", "test", channel_id, stdout=StringIO())
    assert receiver.verified == [True, False]
    receiver.secret = rotated
    call_command("alert", "test", channel_id, stdout=StringIO())
    assert receiver.verified == [True, False, True]
    email, _ = channels.add_channel(personas.alice, email="ops@example.com")
    with pytest.raises(CommandError, match="email channel has no signing secret"):
        call_command("alert", "channel", "rotate", str(email.pk))


@pytest.mark.django_db
def test_the_bell_shows_the_open_alerts_and_tests_only_ones_own_channel(
    personas: Personas, client: Client
) -> None:
    channel, _ = channels.add_channel(personas.alice, email="ops@example.com")
    bobs, _ = channels.add_channel(personas.bob, email="bob@example.com")
    channels.add_rule(channel, RuleKind.DEPTH, threshold=0)
    new_todo(personas.endpoint_a.id, "triage")
    sweep.apply(RuleKind.DEPTH, evaluate.read(RuleKind.DEPTH))
    client.force_login(personas.alice)

    page = client.get(reverse("alerts")).content.decode()

    assert reverse("alerts_bell") in page
    assert 'title="open alerts">1<' in client.get(reverse("alerts_bell")).content.decode()
    client.force_login(personas.bob)
    assert client.get(reverse("alerts_bell")).content == b""
    client.force_login(personas.alice)
    assert "Queue agent-a/triage: 1 todos pending, more than 0" in page
    assert "Send test alert" in page and str(bobs.pk) not in page
    response = client.post(reverse("alert_channel_test", args=[channel.pk]))
    assert response.status_code == 302
    assert messages_of(channel)[-1] == ("test", "queued")
    assert client.post(reverse("alert_channel_test", args=[bobs.pk])).status_code == 404
    assert client.post(reverse("alert_channel_test", args=["nope"])).status_code == 404
    assert messages_of(bobs) == []


@pytest.mark.django_db(transaction=True)
def test_an_email_channel_gets_the_test_through_djangos_mail_backend(personas: Personas) -> None:
    channel, _ = channels.add_channel(personas.alice, email="ops@example.com", name="ops")
    channels.queue_test(channel)
    report = deliver.send_due()
    assert report.delivered == 1
    (message,) = mail.outbox
    assert message.subject == "Switchboard [test] Test alert from Switchboard channel ops"
    # A channel added without a name (the alerts guide's own line) is named by its address.
    unnamed, _ = channels.add_channel(personas.alice, email="oncall@example.com")
    channels.queue_test(unnamed)
    deliver.send_due()
    assert mail.outbox[-1].subject.endswith(
        "Test alert from Switchboard channel oncall@example.com"
    )
