"""The schedule admin: writes through todos/schedules.py, shows its refusals on their fields,
and is closed to non-staff."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.admin_helpers import admin_messages, admin_url
from tests.base import Personas
from todos import schedules
from todos.models import Schedule, Todo

pytestmark = pytest.mark.django_db


def form(personas: Personas, **overrides: Any) -> dict[str, Any]:
    data = {
        "endpoint": str(personas.endpoint_a.pk),
        "queue": "reports",
        "cron": "0 9 * * *",
        "timezone": "Europe/Berlin",
        "title_template": "Report {date}",
        "payload_template": "{}",
        "work_order_template": "",
        "missed": "skip",
        "priority": "0",
        "start_within_seconds": "",
        "finish_within_seconds": "",
        "run_timeout_seconds": "",
        "max_attempts": "5",
    }
    data.update(overrides)
    return data


def test_add_goes_through_the_writer(admin_client: Client, personas: Personas) -> None:
    response = admin_client.post(reverse("admin:todos_schedule_add"), form(personas))

    assert response.status_code == 302, response.content.decode()[:2000]
    schedule = Schedule.objects.get()
    assert schedule.enabled and schedule.next_run_at is not None
    assert schedule.next_run_at == schedules.upcoming(schedule)[0]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("cron", "0 0 30 2 *", "Bad day-of-month"),
        ("timezone", "Nowhere", "unknown time zone"),
        ("title_template", "{tick.year}", "may use only"),
        ("payload_template", "[1]", "must be a JSON object"),
        ("run_timeout_seconds", "3", "between 10"),
    ],
)
def test_bad_input_is_shown_on_its_field(
    admin_client: Client, personas: Personas, field: str, value: str, message: str
) -> None:
    response = admin_client.post(
        reverse("admin:todos_schedule_add"), form(personas, **{field: value})
    )

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == [field] and message in " ".join(errors[field])
    assert not Schedule.objects.exists()


def test_change_moves_the_next_run_and_delete_removes(
    admin_client: Client, personas: Personas
) -> None:
    schedule = schedules.add(personas.endpoint_a, queue="reports", cron="0 9 * * *", title="R")
    change = admin_url("admin:todos_schedule_change", schedule.pk)
    data = form(personas, cron="0 0 1 1 *")
    del data["endpoint"]  # fixed once created

    assert admin_client.post(change, data).status_code == 302
    schedule.refresh_from_db()
    assert schedule.cron == "0 0 1 1 *" and schedule.timezone == "Europe/Berlin"
    assert schedules.local_iso(schedule.next_run_at, "Europe/Berlin")[5:] == "01-01T00:00:00+01:00"

    delete = admin_url("admin:todos_schedule_delete", schedule.pk)
    assert admin_client.post(delete, {"post": "yes"}).status_code == 302
    assert not Schedule.objects.exists()


def test_actions_pause_and_run_now(admin_client: Client, personas: Personas) -> None:
    schedule = schedules.add(personas.endpoint_a, queue="reports", cron="0 9 * * *", title="R")
    changelist = reverse("admin:todos_schedule_changelist")

    response = admin_client.post(
        changelist, {"action": "run_schedules_now", "_selected_action": [schedule.pk]}, follow=True
    )
    (todo,) = Todo.objects.all()
    assert any(todo.id in m for m in admin_messages(response))
    admin_client.post(changelist, {"action": "pause_schedules", "_selected_action": [schedule.pk]})
    schedule.refresh_from_db()
    assert not schedule.enabled


def test_non_staff_cannot_reach_it(personas: Personas) -> None:
    schedules.add(personas.endpoint_b, queue="q", cron="* * * * *", title="Bob's")
    client = Client()
    client.force_login(personas.bob)
    response = client.get(reverse("admin:todos_schedule_changelist"))
    assert response.status_code == 302 and "/login/" in response["Location"]
