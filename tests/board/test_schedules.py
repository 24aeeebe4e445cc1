"""Schedules on the Board: the list, a schedule's page (next five runs, last runs with their
todos), creation with the writer's errors by field, pause/resume, run now, remove with a
confirm; another human's schedule is a 404 like an unknown one."""

from __future__ import annotations

import datetime as dt
import html
import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.base import Personas
from todos import schedules
from todos.models import Schedule, Todo

pytestmark = pytest.mark.django_db

FORM = {
    "endpoint": "agent-a",
    "queue": "reports",
    "cron": "0 9 * * 1-5",
    "timezone": "Europe/Berlin",
    "title": "Daily report {date}",
    "payload": '{"kind": "daily"}',
    "work_order": "",
    "missed": "skip",
    "max_attempts": "3",
}


def alices(personas: Personas, **overrides: object) -> Schedule:
    args: dict[str, object] = {"queue": "reports", "cron": "0 9 * * *", "title": "Report"}
    args.update(overrides)
    return schedules.add(personas.endpoint_a, **args)  # type: ignore[arg-type]


def test_the_rail_links_the_schedules(alice_client: Client) -> None:
    page = alice_client.get(reverse("todo_list")).content.decode()
    assert f'href="{reverse("schedules")}"' in page


def test_create_then_see_the_next_five_runs(personas: Personas, alice_client: Client) -> None:
    response = alice_client.post(reverse("schedule_new"), FORM)

    schedule = Schedule.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("schedule_detail", args=[schedule.pk])
    assert (schedule.endpoint, schedule.queue, schedule.created_by) == (
        personas.endpoint_a,
        "reports",
        personas.alice,
    )
    assert schedule.payload_template == {"kind": "daily"} and schedule.max_attempts == 3
    page = alice_client.get(response["Location"]).content.decode()
    upcoming = [schedules.local_iso(t, "Europe/Berlin") for t in schedules.upcoming(schedule)]
    assert len(upcoming) == 5
    for tick in upcoming:
        assert f'<li class="mono">{tick}</li>' in page
    assert "No runs yet." in page


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("cron", "0 0 30 2 *", "Bad day-of-month"),
        ("cron", "0 9 * *", "must have five fields"),
        ("timezone", "Europe/Atlantis", "unknown time zone"),
        ("title", "{tick.__class__}", "may use only"),
        ("payload", "[1, 2]", "must be a JSON object"),
        ("payload", "{nope", "Not JSON"),
        ("queue", " reports", "spaces"),
        ("max_attempts", "0", "between 1 and"),
        ("endpoint", "agent-b", "Select a valid choice"),
    ],
)
def test_bad_input_is_shown_on_its_field(
    personas: Personas, alice_client: Client, field: str, value: str, message: str
) -> None:
    response = alice_client.post(reverse("schedule_new"), {**FORM, field: value})

    assert response.status_code == 200
    assert not Schedule.objects.exists()
    errors = response.context["form"].errors
    assert list(errors) == [field]
    assert message in " ".join(errors[field])
    assert html.escape(message) in response.content.decode()


def test_the_list_shows_only_mine_in_a_fixed_number_of_queries(
    personas: Personas, alice_client: Client
) -> None:
    mine = alices(personas, title="Mine")
    schedules.add(personas.endpoint_b, queue="q", cron="* * * * *", title="Bobs secret")
    with CaptureQueriesContext(connection) as one:
        page = alice_client.get(reverse("schedules")).content.decode()
    assert reverse("schedule_detail", args=[mine.pk]) in page and "Bobs secret" not in page

    for i in range(3):
        alices(personas, title=f"More {i}")
    with CaptureQueriesContext(connection) as four:
        alice_client.get(reverse("schedules"))
    assert len(four) == len(one)


def test_another_humans_schedule_is_a_404(personas: Personas, bob_client: Client) -> None:
    schedule = alices(personas)
    pk = schedule.pk
    assert bob_client.get(reverse("schedule_detail", args=[pk])).status_code == 404
    assert bob_client.get(reverse("schedule_remove", args=[pk])).status_code == 404
    for action in ("pause", "resume", "run-now"):
        url = reverse("schedule_action", args=[pk, action])
        assert bob_client.post(url).status_code == 404
    url = reverse("schedule_remove", args=[pk])
    assert bob_client.post(url, {"confirm": "yes"}).status_code == 404
    assert bob_client.get(reverse("schedule_detail", args=[999999])).status_code == 404
    schedule.refresh_from_db()
    assert schedule.enabled and not Todo.objects.exists()


def test_pause_resume_and_run_now_with_a_link_to_the_todo(
    personas: Personas, alice_client: Client
) -> None:
    schedule = alices(personas)
    detail = reverse("schedule_detail", args=[schedule.pk])

    alice_client.post(reverse("schedule_action", args=[schedule.pk, "pause"]))
    schedule.refresh_from_db()
    assert not schedule.enabled
    assert "Resume</button>" in alice_client.get(detail).content.decode()
    alice_client.post(reverse("schedule_action", args=[schedule.pk, "resume"]))
    schedule.refresh_from_db()
    assert schedule.enabled

    response = alice_client.post(reverse("schedule_action", args=[schedule.pk, "run-now"]))
    assert response["Location"] == detail
    (todo,) = Todo.objects.all()
    page = alice_client.get(detail).content.decode()
    assert f'href="{reverse("todo_detail", args=[todo.id])}"' in page
    assert alice_client.post(
        reverse("schedule_action", args=[schedule.pk, "nope"])
    ).status_code == (404)


def test_resuming_a_kept_six_field_cron_says_to_edit_it_first(
    personas: Personas, alice_client: Client
) -> None:
    """A six-field cron kept from before five were required (todos/migrations/0027 paused
    them) is not resumed: the page says why, and nothing fires."""
    schedule = alices(personas)
    schedules.pause(schedule)
    Schedule.objects.filter(pk=schedule.pk).update(cron="* * * * * *")

    response = alice_client.post(
        reverse("schedule_action", args=[schedule.pk, "resume"]), follow=True
    )

    assert "Not resumed: cron: must have five fields" in html.unescape(response.content.decode())
    assert not Schedule.objects.get(pk=schedule.pk).enabled


def test_a_fired_tick_is_listed_with_its_todo(personas: Personas, alice_client: Client) -> None:
    schedule = alices(personas, cron="* * * * *")
    tick = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=tick)
    (fired,) = schedules.fire_due(now=tick + dt.timedelta(seconds=2))

    page = alice_client.get(reverse("schedule_detail", args=[schedule.pk])).content.decode()
    assert "2026-06-01T09:00:00" in page
    assert f'href="{reverse("todo_detail", args=[fired.todo_id])}"' in page


def test_the_payload_shows_as_indented_json(personas: Personas, alice_client: Client) -> None:
    payload = {"k": "{tick}", "dry_run": True, "owner": None, "note": "<b>ünïcode</b>"}
    schedule = alices(personas, payload=payload)

    page = alice_client.get(reverse("schedule_detail", args=[schedule.pk])).content.decode()
    shown = html.unescape(page.split('<pre class="payload">', 1)[1].split("</pre>", 1)[0])
    # JSON as the todo pages show it (true and null, not Python's True and None), escaped.
    assert json.loads(shown) == payload
    assert shown == json.dumps(schedule.payload_template, indent=2, ensure_ascii=False)
    assert "<b>ünïcode</b>" not in page


def test_remove_asks_first(personas: Personas, alice_client: Client) -> None:
    schedule = alices(personas)
    url = reverse("schedule_remove", args=[schedule.pk])

    assert "Yes, remove the schedule" in alice_client.get(url).content.decode()
    alice_client.post(url)  # no confirm: asks again, removes nothing
    assert Schedule.objects.exists()
    response = alice_client.post(url, {"confirm": "yes"})
    assert response["Location"] == reverse("schedules")
    assert not Schedule.objects.exists()
