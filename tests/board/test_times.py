"""Times as people read them (relative, absolute on hover), finished time and duration in the
list, and lease holders by name (switchboard/templatetags/board_tags.py)."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.template import Context, Template
from django.test import Client
from django.urls import reverse

from switchboard.templatetags.board_tags import duration, relative
from tests.base import Personas
from tests.reach import OWNER, claimed, new_todo
from todos import lifecycle

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("seconds_ago", "words"),
    [
        (2, "just now"),
        (42, "42 s ago"),
        (3 * 60 + 59, "3 min ago"),
        (5 * 3600, "5 h ago"),
        (47 * 3600, "47 h ago"),
        (3 * 86400, "3 d ago"),
        (-120, "in 2 min"),
        (-2, "just now"),
    ],
)
def test_relative_words(seconds_ago: int, words: str) -> None:
    assert relative(NOW - dt.timedelta(seconds=seconds_ago), NOW) == words


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (0.4, "0.4 s"),
        (12, "12 s"),
        (252, "4 min 12 s"),
        (240, "4 min"),
        (11100, "3 h 5 min"),
        (2 * 86400 + 4 * 3600, "2 d 4 h"),
    ],
)
def test_durations(seconds: float, words: str) -> None:
    assert duration(seconds) == words


def test_when_shows_the_relative_time_with_the_absolute_one_on_hover() -> None:
    moment = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=3, seconds=5)
    html = Template("{% load board_tags %}{% when t %}").render(Context({"t": moment}))

    assert html == (
        f'<time datetime="{moment.isoformat()}" title="{moment:%Y-%m-%d %H:%M:%S} UTC"'
        " data-relative>3 min ago</time>"
    )
    assert Template("{% load board_tags %}{% when t %}").render(Context({"t": None})) == ""


def test_the_list_shows_finished_time_and_duration_and_relative_times(
    alice_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a.id
    done = claimed(ep, "work", title="finished one").todo.id
    lifecycle.complete(ep, done, owner=OWNER)
    new_todo(ep, "work", title="still pending")

    body = alice_client.get(reverse("todo_list")).content.decode()

    row = body.split(f'id="row-{done}"')[1].split("</tr>")[0]
    assert len(re.findall(r"<time datetime=[^>]+ data-relative>just now</time>", row)) == 2
    assert re.search(r'title="from created to finished">· \d+\.\d s</span>', row)
    assert re.search(r'class="sort">Finished</a> · took</th>', body)


def test_an_operators_lease_shows_the_username_not_the_id(
    alice_client: Client, personas: Personas
) -> None:
    todo = new_todo(personas.endpoint_a.id, "work")
    lifecycle.operator_claim(personas.alice.id, todo.id)

    listed = alice_client.get(reverse("todo_list")).content.decode()
    page = alice_client.get(reverse("todo_detail", args=[todo.id])).content.decode()

    assert "held by operator alice" in listed
    assert "<dt>Held by</dt><dd>operator alice</dd>" in page
    assert f"human:{personas.alice.id}" not in listed + page


def test_another_humans_lease_is_named_with_one_query_per_render(personas: Personas) -> None:
    html = Template("{% load board_tags %}{% holder a %} {% holder b %} {% holder c %}").render(
        Context({"a": f"human:{personas.bob.id}", "b": f"human:{personas.bob.id}", "c": "x"})
    )
    assert html == "operator bob operator bob x"
    assert (
        Template("{% load board_tags %}{% holder o %}").render(Context({"o": "human:999999"}))
        == "a deleted operator"
    )
    assert (
        Template("{% load board_tags %}{% holder o %}").render(Context({"o": "endpoint:agent-a"}))
        == "endpoint:agent-a"
    )


def test_a_retry_time_says_how_far_off_it_is_with_its_zone(
    alice_client: Client, personas: Personas
) -> None:
    todo = claimed(personas.endpoint_a.id, "work", owner=OWNER).todo
    lifecycle.fail(personas.endpoint_a.id, todo.id, owner=OWNER, retry_after_seconds=600)
    page = alice_client.get("/").content.decode()
    pattern = r'retry <time datetime="[^"]+" title="([^"]+)" data-relative>([^<]+)<'
    match = re.search(pattern, page)
    assert match is not None, page
    assert match[1].endswith(" UTC")
    assert match[2] in ("in 9 min", "in 10 min")
