"""The Board's new-todo form: a todo on one of the human's live endpoints, through
``lifecycle.create`` (the same checks as intake and ``manage.py enqueue``), every time field
included; each refusal shown at the field it names, and nothing created."""

from __future__ import annotations

import datetime as dt
import html
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.base import Personas
from tests.factories import EndpointFactory
from todos import lifecycle
from todos.models import Todo

pytestmark = pytest.mark.django_db
URL = reverse("todo_new")


def data(**changes: Any) -> dict[str, Any]:
    form: dict[str, Any] = {
        "endpoint": "agent-a",
        "queue": "triage",
        "title": "Look at the flaky test",
        "payload": '{"pr": 42}',
        "work_order": "Find why it flakes.",
        "max_attempts": "3",
        "priority": "",
        "not_before": "",
        "start_by": "",
        "finish_by": "",
        "run_timeout_seconds": "",
        "dedupe_key": "",
    }
    form.update(changes)
    return form


def field_error(response: Any, field: str) -> str:
    body = html.unescape(response.content.decode())
    found = re.search(rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>', body, re.S)
    assert found is not None, f"no error at {field}"
    return found[1]


def test_the_form_offers_only_the_humans_live_endpoints(
    alice_client: Client, personas: Personas
) -> None:
    revoked = EndpointFactory(owner=personas.alice, slug="old-agent")
    lifecycle.revoke_endpoint(personas.alice.id, revoked.id)

    body = alice_client.get(URL).content.decode()

    assert 'value="agent-a"' in body
    assert "agent-b" not in body and "old-agent" not in body
    assert URL in alice_client.get(reverse("todo_list")).content.decode()  # the list links it


def test_a_todo_is_created_with_every_field_and_shown(
    alice_client: Client, personas: Personas
) -> None:
    finish_by = (timezone.now() + dt.timedelta(hours=2)).replace(microsecond=0)
    response = alice_client.post(
        URL,
        data(
            priority="7",
            not_before="+1m",
            start_by="+10m",
            finish_by=finish_by.isoformat(),
            run_timeout_seconds="600",
            dedupe_key="flaky-42",
        ),
    )

    todo = Todo.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/todos/{todo.id}"
    assert (todo.endpoint_id, todo.queue, todo.title, todo.payload) == (
        personas.endpoint_a.id,
        "triage",
        "Look at the flaky test",
        {"pr": 42},
    )
    assert (todo.work_order, todo.max_attempts, todo.priority) == ("Find why it flakes.", 3, 7)
    assert (todo.run_timeout_seconds, todo.dedupe_key, todo.finish_by) == (
        600,
        "flaky-42",
        finish_by,
    )
    assert todo.not_before is not None and todo.start_by is not None
    assert (todo.start_by - todo.not_before).total_seconds() == pytest.approx(540, abs=1)
    page = alice_client.get(response["Location"]).content.decode()
    assert f"Created {todo.id} on triage" in page


def test_a_second_todo_with_the_key_shows_the_first(
    alice_client: Client, personas: Personas
) -> None:
    first = alice_client.post(URL, data(dedupe_key="k"))
    second = alice_client.post(URL, data(dedupe_key="k", title="again"))

    [todo] = Todo.objects.all()
    assert second["Location"] == first["Location"] == f"/todos/{todo.id}"
    page = html.unescape(alice_client.get(second["Location"]).content.decode())
    assert f"Nothing created: {todo.id} is unfinished with the dedupe key 'k'" in page


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"endpoint": "agent-b"}, "endpoint", "Select a valid choice"),
        ({"queue": ""}, "queue", "required"),
        ({"queue": "a\x01b"}, "queue", "control characters"),
        ({"payload": "{"}, "payload", "is not JSON"),
        ({"max_attempts": "0"}, "max_attempts", "between 1 and 1000"),
        ({"priority": "1001"}, "priority", "between -1000 and 1000"),
        ({"not_before": "tomorrow"}, "not_before", "ISO 8601 instant or +N"),
        ({"start_by": "2020-01-01T00:00:00Z"}, "start_by", "already past"),
        ({"finish_by": "2030-01-01T00:00:00"}, "finish_by", "time zone"),
        ({"start_by": "+2h", "finish_by": "+1h"}, "start_by", "must not be after finish_by"),
        ({"not_before": "+2h", "start_by": "+1h"}, "not_before", "must not be after start_by"),
        ({"run_timeout_seconds": "5"}, "run_timeout_seconds", "between 10 and 604800"),
        ({"run_timeout_seconds": "ten"}, "run_timeout_seconds", "whole number"),
        ({"dedupe_key": "a\x01"}, "dedupe_key", "control characters"),
    ],
)
def test_bad_input_is_refused_at_its_field_and_nothing_is_created(
    alice_client: Client, personas: Personas, changes: dict[str, str], field: str, message: str
) -> None:
    response = alice_client.post(URL, data(**changes))

    assert response.status_code == 200
    assert message in field_error(response, field)
    assert not Todo.objects.exists()


def test_a_revoked_endpoint_picked_before_the_page_was_drawn_is_refused(
    alice_client: Client, personas: Personas
) -> None:
    alice_client.get(URL)
    lifecycle.revoke_endpoint(personas.alice.id, personas.endpoint_a.id)

    response = alice_client.post(URL, data())

    assert "Select a valid choice" in field_error(response, "endpoint")
    assert not Todo.objects.exists()


def test_logged_out_is_sent_to_log_in(client: Client) -> None:
    response = client.post(URL, data())
    assert response.status_code == 302 and "login" in response["Location"]
    assert not Todo.objects.exists()
