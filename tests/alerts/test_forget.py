"""Forgetting a todo reaches its alerts (alerts/sweep.py's ``forget``, registered with
activity/forget.py by the app): the row stays, its summary and detail lose the title, a message
still queued goes out saying so, and a forget waits for an evaluation that read the todo before
it was forgotten, so that evaluation's alert is rewritten too."""

from __future__ import annotations

import pytest

from activity import forget
from alerts import messages, sweep
from alerts.models import Alert, RuleKind
from tests.alerts.conftest import Receiver
from tests.alerts.helpers import TITLE, dead_letter, raced_by, webhook
from tests.base import Personas

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_app_registers_its_eraser_with_the_forget() -> None:
    assert forget._ERASERS["alerts"] is sweep.forget


def test_a_forgotten_todo_s_alert_stays_without_its_title_and_its_message_says_so(
    personas: Personas, receiver: Receiver
) -> None:
    channel = webhook(personas, receiver)
    todo_id = dead_letter(personas.endpoint_a.id)
    sweep.evaluate_all(sweep.AlertReport())  # opened and queued, not sent yet
    (alert,) = Alert.objects.filter(channel=channel)
    assert TITLE in alert.summary and alert.detail["title"] == TITLE

    assert forget.forget(personas.alice.id, [todo_id]) == (todo_id,)

    alert.refresh_from_db()
    assert (alert.kind, alert.state, alert.todo_id) == ("dead_letter", "event", todo_id)
    assert alert.summary == (
        f"Todo {todo_id} dead-lettered on agent-a/triage after 1 attempt(s); the todo was forgotten"
    )
    assert set(alert.detail) == {"attempts", "at", "forgotten"}
    sweep.run()
    (sent,) = receiver.bodies()
    assert TITLE not in str(sent) and "the todo was forgotten" in sent["text"]


def test_an_alert_about_a_todo_forgotten_before_the_evaluation_says_so(
    personas: Personas, receiver: Receiver
) -> None:
    """Dead-lettered, then forgotten before the sweeper's next pass: the alert it raises is the
    one the forget would have rewritten, no title and marked forgotten."""
    channel = webhook(personas, receiver)
    todo_id = dead_letter(personas.endpoint_a.id)
    assert forget.forget(personas.alice.id, [todo_id]) == (todo_id,)

    sweep.evaluate_all(sweep.AlertReport())

    (alert,) = Alert.objects.filter(channel=channel)
    assert (alert.kind, alert.todo_id) == ("dead_letter", todo_id)
    assert set(alert.detail) == {"attempts", "at", "forgotten"}
    assert alert.summary == (
        f"Todo {todo_id} dead-lettered on agent-a/triage after 1 attempt(s); the todo was forgotten"
    )


def test_an_alert_keeps_only_the_listed_facts_of_a_forgotten_todo() -> None:
    detail = {"title": "rotate the key", "attempts": 3, "holder": "bot", "added_later": "x"}

    kept = messages.forgotten(detail)

    assert kept == {"attempts": 3, "holder": "bot", "forgotten": True}
    line = messages.summary(
        RuleKind.SILENT_CLAIM, endpoint="ep", queue="q", todo_id="td_1", detail=kept
    )
    assert line == "Todo td_1 on ep/q: claimed, no heartbeat for 0s; the todo was forgotten"


def test_a_forget_waits_for_an_evaluation_that_read_the_todo_before_it(
    personas: Personas, receiver: Receiver
) -> None:
    channel = webhook(personas, receiver)
    todo_id = dead_letter(personas.endpoint_a.id)

    # The evaluation reads the dead letter (the title in it), then opens the alert; the forget
    # starts in between.
    waited = raced_by(lambda: forget.forget(personas.alice.id, [todo_id]), todo_id)

    assert waited
    (alert,) = Alert.objects.filter(channel=channel)
    assert TITLE not in alert.summary and "title" not in alert.detail
    assert alert.detail["forgotten"] is True
