"""Todo retention and alerts: an alert names its todo without a foreign key and outlives it, so
as retention (todos/retention.py) deletes a todo the alerts app's eraser (alerts/sweep.py's
``unlink``, registered with retention by the app) rewrites its alerts without the title and
unlinks them, in the batch's transaction, after waiting for an evaluation in progress; the
alert itself stays for its own keep (alerts/sql/trim_alerts.sql)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from alerts import messages, sweep
from alerts.models import Alert, RuleKind
from switchboard.lib.sql import fetch_all
from tests.alerts.conftest import Receiver
from tests.alerts.helpers import TITLE, dead_letter, raced_by, webhook
from tests.base import Personas
from todos import retention
from todos.models import Todo

pytestmark = pytest.mark.django_db(transaction=True)


def _past_retention(todo_id: str) -> None:
    fetch_all(
        "UPDATE todos SET finished_at = now() - interval '400 days' WHERE id = %(id)s",
        {"id": todo_id},
    )


def test_the_app_registers_its_eraser_with_retention() -> None:
    assert retention._ERASERS["alerts"] is sweep.unlink


def test_retention_unlinks_the_alerts_of_the_todos_it_deletes_and_keeps_them_untitled(
    personas: Personas, receiver: Receiver
) -> None:
    channel = webhook(personas, receiver)
    gone = dead_letter(personas.endpoint_a.id)
    kept = dead_letter(personas.endpoint_a.id)
    sweep.evaluate_all(sweep.AlertReport())  # opened and queued, not sent yet
    assert set(Alert.objects.values_list("todo_id", flat=True)) == {gone, kept}
    _past_retention(gone)

    assert retention.run().todos == 1

    assert not Todo.objects.filter(id=gone).exists()
    alerts = {a.subject.split("@")[0]: a for a in Alert.objects.filter(channel=channel)}
    assert (alerts[gone].todo_id, alerts[kept].todo_id) == (None, kept)
    assert alerts[gone].state == "event"
    assert alerts[gone].summary == (
        f"Todo {gone} dead-lettered on agent-a/triage after 1 attempt(s);"
        " the todo was deleted by retention"
    )
    assert set(alerts[gone].detail) == {"attempts", "at", "deleted"}
    assert TITLE in alerts[kept].summary and alerts[kept].detail["title"] == TITLE
    sweep.run()
    sent = {body["alert"]["subject"].split("@")[0]: body for body in receiver.bodies()}
    assert TITLE not in str(sent[gone]) and "deleted by retention" in sent[gone]["text"]


def test_the_history_links_an_events_todo_until_retention_deletes_it(
    personas: Personas, receiver: Receiver
) -> None:
    webhook(personas, receiver)
    gone = dead_letter(personas.endpoint_a.id)
    kept = dead_letter(personas.endpoint_a.id)
    sweep.evaluate_all(sweep.AlertReport())
    _past_retention(gone)
    retention.run()
    client = Client()
    client.force_login(personas.alice)

    page = client.get(reverse("alerts")).content.decode()

    # A dead letter is an event, never open: the history is where it is listed.
    history = page.split('id="alert-history"', 1)[1].split("</table>", 1)[0]
    assert f'href="{reverse("todo_detail", args=[kept])}"' in history
    assert f"Todo {gone} dead-lettered" in history
    assert reverse("todo_detail", args=[gone]) not in history


def test_a_forgotten_todo_s_alert_still_says_it_was_forgotten_once_retention_deletes_it() -> None:
    forgotten = messages.forgotten({"title": "rotate the key", "attempts": 2})

    deleted = messages.forgotten(forgotten, "deleted")

    assert deleted == {"attempts": 2, "forgotten": True, "deleted": True}
    line = messages.summary(
        RuleKind.DEAD_LETTER, endpoint="ep", queue="q", todo_id="td_1", detail=deleted
    )
    assert line == "Todo td_1 dead-lettered on ep/q after 2 attempt(s); the todo was forgotten"


def test_retention_waits_for_an_evaluation_that_read_the_todo_before_it(
    personas: Personas, receiver: Receiver
) -> None:
    channel = webhook(personas, receiver)
    todo_id = dead_letter(personas.endpoint_a.id)
    deleted: list[int] = []

    def retaining() -> None:
        _past_retention(todo_id)
        deleted.append(retention.run().todos)

    # The evaluation reads the dead letter, then opens its alert; another sweeper's retention
    # deletes the todo in between.
    waited = raced_by(retaining, todo_id)

    assert deleted == [1]
    assert not Todo.objects.filter(id=todo_id).exists()
    (alert,) = Alert.objects.filter(channel=channel)
    assert alert.todo_id is None, "the evaluation's alert names a todo retention deleted"
    assert TITLE not in alert.summary and alert.detail.get("deleted") is True
    assert waited
