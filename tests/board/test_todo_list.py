"""The todo list: filters, per-state counts, keyset pagination, a constant number of queries."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

import pytest
from django.test import Client
from django.urls import reverse

from switchboard import credentials, teams
from switchboard.scope import Scope
from tests.base import Personas
from tests.factories import EndpointFactory, HumanFactory
from tests.reach import BOT, claimed, new_todo, set_created_at
from todos import lifecycle, queries
from todos.models import Todo

pytestmark = pytest.mark.django_db

ROW_ID = re.compile(r'<tr id="row-(td_[a-z2-7]{20})"')
NEXT_LINK = re.compile(r'href="\?([^"]*)" rel="next"')


def rows(response: Any) -> list[str]:
    assert response.status_code == 200
    return ROW_ID.findall(response.content.decode())


def test_the_list_shows_the_humans_todos_newest_first(
    alice_client: Client, personas: Personas
) -> None:
    old = new_todo(personas.endpoint_a.id, "work", title="older").id
    new = new_todo(personas.endpoint_a.id, "work", title="newer").id
    set_created_at(old, 60)
    new_todo(personas.endpoint_b.id, "work", title="bob's")

    response = alice_client.get(reverse("todo_list"))

    assert rows(response) == [new, old]
    assert b"bob&#x27;s" not in response.content and b"bob's" not in response.content


def test_filters_by_endpoint_queue_state_and_dead_letter(
    alice_client: Client, personas: Personas
) -> None:
    other = EndpointFactory(owner=personas.alice, slug="agent-a2")
    on_a = new_todo(personas.endpoint_a.id, queue="ci").id
    on_other = new_todo(other.id, queue="docs").id
    running = claimed(personas.endpoint_a.id, "ci", owner=BOT, claimant="harness/run-1").todo.id
    dead = claimed(personas.endpoint_a.id, "ci", owner=BOT, claimant="harness/run-1").todo.id
    lifecycle.fail(personas.endpoint_a.id, dead, owner=BOT, retryable=False)
    retrying = claimed(personas.endpoint_a.id, "ci", owner=BOT, claimant="harness/run-1").todo.id
    lifecycle.fail(personas.endpoint_a.id, retrying, owner=BOT, retryable=True)
    url = reverse("todo_list")

    assert set(rows(alice_client.get(url, {"endpoint": "agent-a2"}))) == {on_other}
    assert on_other not in rows(alice_client.get(url, {"queue": "ci"}))
    assert set(rows(alice_client.get(url, {"state": "pending"}))) == {on_a, on_other}
    assert rows(alice_client.get(url, {"state": "claimed"})) == [running]
    assert set(rows(alice_client.get(url, {"state": "failed"}))) == {dead, retrying}
    assert rows(alice_client.get(url, {"dead": "1"})) == [dead]
    # Filters combine.
    assert rows(alice_client.get(url, {"queue": "docs", "state": "claimed"})) == []


def test_an_unknown_state_filter_is_ignored_not_an_error(
    alice_client: Client, personas: Personas
) -> None:
    todo = new_todo(personas.endpoint_a.id, "work").id

    assert rows(alice_client.get(reverse("todo_list"), {"state": "bogus"})) == [todo]


def test_per_state_counts_are_one_aggregate_over_the_scope(personas: Personas) -> None:
    new_todo(personas.endpoint_a.id, "work")
    new_todo(personas.endpoint_a.id, queue="other")
    claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1")
    dead = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id
    lifecycle.fail(personas.endpoint_a.id, dead, owner=BOT, retryable=False)
    new_todo(personas.endpoint_b.id, "work")  # bob's: never counted for alice

    alice = Scope.of_human(personas.alice.id)
    counts = queries.state_counts(alice, queries.TodoFilters())
    in_queue = queries.state_counts(alice, queries.TodoFilters(queue="work"))

    assert (counts["all"], counts["pending"], counts["claimed"], counts["failed"]) == (4, 2, 1, 1)
    assert counts["dead_letter"] == 1 and counts["completed"] == 0
    assert (in_queue["all"], in_queue["pending"]) == (3, 1)


def test_the_counts_are_shown_as_state_tabs(alice_client: Client, personas: Personas) -> None:
    new_todo(personas.endpoint_a.id, "work")
    new_todo(personas.endpoint_a.id, "work")
    claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1")

    body = alice_client.get(reverse("todo_list")).content.decode()

    assert "pending 2</span>" in body and "claimed 1</span>" in body and "all 3</span>" in body


def test_keyset_pagination_walks_every_todo_once_newest_first(
    alice_client: Client, personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queries, "PAGE_SIZE", 3)
    ids = [new_todo(personas.endpoint_a.id, "work", title=f"t{i}").id for i in range(7)]
    # The last two share a created_at (the tie is broken by id); the rest are a second apart.
    for age, todo_id in enumerate(ids):
        set_created_at(todo_id, 100 - min(age, 5))
    todos = Todo.objects.filter(id__in=ids)
    expected = [t.id for t in sorted(todos, key=lambda t: (t.created_at, t.id), reverse=True)]

    pages: list[list[str]] = []
    params: dict[str, str] = {}
    while len(pages) < 5:
        response = alice_client.get(reverse("todo_list"), params)
        pages.append(rows(response))
        older = NEXT_LINK.search(response.content.decode())
        if older is None:
            break
        params = dict(parse_qsl(html.unescape(older.group(1))))

    assert [len(page) for page in pages] == [3, 3, 1]
    assert [todo_id for page in pages for todo_id in page] == expected


def test_pagination_keeps_the_filters(
    alice_client: Client, personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queries, "PAGE_SIZE", 1)
    for _ in range(2):
        new_todo(personas.endpoint_a.id, queue="ci")
    new_todo(personas.endpoint_a.id, queue="other")

    first = alice_client.get(reverse("todo_list"), {"queue": "ci"})
    older = NEXT_LINK.search(first.content.decode())
    assert older is not None
    second = alice_client.get(reverse("todo_list"), dict(parse_qsl(html.unescape(older.group(1)))))

    assert len(rows(second)) == 1 and rows(second) != rows(first)
    assert NEXT_LINK.search(second.content.decode()) is None


def test_a_malformed_cursor_starts_from_the_top(alice_client: Client, personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id, "work").id

    assert rows(alice_client.get(reverse("todo_list"), {"after": "garbage"})) == [todo]


def test_the_list_makes_the_same_queries_for_1_and_20_todos(
    alice_client: Client,
    personas: Personas,
    django_assert_num_queries: Callable[..., Any],
) -> None:
    new_todo(personas.endpoint_a.id, "work")
    # session, user, the page (endpoint joined), the counts, the paused queues (endpoint
    # joined), the endpoint filter's options, the rail's unread count
    with django_assert_num_queries(7):
        assert len(rows(alice_client.get(reverse("todo_list")))) == 1
    for _ in range(19):
        claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1")
    with django_assert_num_queries(7):
        assert len(rows(alice_client.get(reverse("todo_list")))) == 20


def _empty_row(client: Client, **params: str) -> str:
    body = client.get(reverse("todo_list"), params).content.decode()
    found = re.search(r'<tr id="rows-empty">(.*?)</tr>', body, re.S)
    assert found is not None, "no empty row"
    return html.unescape(found[1])


def test_a_human_who_sees_no_endpoint_is_told_why_the_list_is_empty_and_how_to_get_one(
    personas: Personas, django_assert_num_queries: Callable[..., Any]
) -> None:
    """The README's superuser owns no endpoint and is in no team: staff are not special on the
    Board, and the empty list says whose todos are whose."""
    new_todo(personas.endpoint_a.id, "work")
    admin = Client()
    admin.force_login(personas.admin)

    with django_assert_num_queries(7):  # as many as for a list with endpoints
        said = _empty_row(admin)

    assert "No todos match" not in said
    assert "You see no endpoint yet" in said
    assert "belongs to its endpoint's owner, a human or a team" in said
    assert 'href="/admin/"' in said  # staff: every todo is in the admin
    assert f'href="{reverse("teams")}"' in said and f'href="{reverse("endpoint_new")}"' in said
    assert "manage.py create_endpoint --owner admin" in said
    assert "team add TEAM admin" in said


def test_a_filter_that_matches_nothing_says_only_that(
    alice_client: Client, personas: Personas
) -> None:
    said = _empty_row(alice_client, queue="no-such-queue")

    assert re.sub(r"<[^>]+>", "", said).strip() == "No todos match."
    # A member of a team who owns no endpoint sees the team's: no hint either.
    carol = HumanFactory(username="carol")
    team = teams.create_team("ops", personas.alice)
    teams.add_member(team, carol)
    credentials.create_endpoint(None, team=team, name="Ops", slug="agent-t", verbs=[])
    member = Client()
    member.force_login(carol)
    assert "No todos match." in _empty_row(member)
