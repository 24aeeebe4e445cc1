"""The todo list's search, queue prefix, created range and sorts on the page: the form keeps
what was typed, pages keep the filters and the sort, bad input is said on the page (never a
500), and bob finds none of alice's todos."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

import pytest
from django.test import Client
from django.urls import reverse

from tests.base import Personas
from tests.reach import new_todo, set_created_at
from todos import queries
from todos.models import Todo

pytestmark = pytest.mark.django_db

ROW_ID = re.compile(r'<tr id="row-(td_[a-z2-7]{20})"')
NEXT_LINK = re.compile(r'href="\?([^"]*)" rel="next"')
ALERT = re.compile(r'<div class="error filter-errors" role="alert">(.*?)</div>', re.S)


def rows(response: Any) -> list[str]:
    assert response.status_code == 200
    return ROW_ID.findall(response.content.decode())


def alert(response: Any) -> str:
    found = ALERT.search(response.content.decode())
    return html.unescape(found.group(1)) if found else ""


def test_a_search_lists_its_matches_and_the_form_keeps_it(
    alice_client: Client, personas: Personas
) -> None:
    hit = new_todo(personas.endpoint_a.id, title="Login redirects in a loop").id
    new_todo(personas.endpoint_a.id, title="Checkout is slow")

    response = alice_client.get(reverse("todo_list"), {"q": "redirects"})

    assert rows(response) == [hit]
    assert 'name="q" value="redirects"' in response.content.decode()
    assert alert(response) == ""


def test_a_todo_id_finds_that_todo_and_bob_never_finds_it(
    alice_client: Client, bob_client: Client, personas: Personas
) -> None:
    todo = new_todo(personas.endpoint_a.id, title="alice's plan").id
    new_todo(personas.endpoint_a.id, title="another")

    assert rows(alice_client.get(reverse("todo_list"), {"q": todo})) == [todo]
    for q in (todo, "alice's plan", todo[:10]):
        response = bob_client.get(reverse("todo_list"), {"q": q})
        assert rows(response) == []
        assert "all 0</span>" in response.content.decode()


def test_the_queue_prefix_and_the_created_range_filter_the_page(
    alice_client: Client, personas: Personas
) -> None:
    lint = new_todo(personas.endpoint_a.id, "ci-lint").id
    old = new_todo(personas.endpoint_a.id, "ci-test").id
    new_todo(personas.endpoint_a.id, "docs")
    set_created_at(old, 3 * 86400)
    url = reverse("todo_list")

    prefixed = alice_client.get(url, {"queue": "ci-*"})
    assert set(rows(prefixed)) == {lint, old}
    assert 'name="queue" value="ci-*"' in prefixed.content.decode()
    old_date = Todo.objects.get(id=old).created_at.date().isoformat()
    from_date = Todo.objects.get(id=lint).created_at.date().isoformat()
    assert rows(alice_client.get(url, {"queue": "ci-*", "created_from": from_date})) == [lint]
    assert rows(alice_client.get(url, {"created_to": old_date})) == [old]


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"q": "x" * 500}, "Search is at most 200 characters (500 given)."),
        ({"q": "ab"}, "Search for three letters or digits in a row, or a whole todo id."),
        ({"q": "bad\x00"}, "Search contains"),
        ({"queue": "ci\x00"}, "Queue contains"),
        ({"endpoint": "agent\x00"}, "Endpoint contains"),
        ({"created_from": "31/12/2026"}, "Created from: '31/12/2026' is not a date (YYYY-MM-DD)."),
        ({"created_to": "2026-13-01"}, "Created to: '2026-13-01' is not a date (YYYY-MM-DD)."),
        ({"created_from": "2026-02-02", "created_to": "2026-02-01"}, "Created from is after"),
    ],
)
def test_a_filter_that_cannot_be_read_is_said_on_the_page_and_lists_nothing(
    alice_client: Client, personas: Personas, params: dict[str, str], said: str
) -> None:
    new_todo(personas.endpoint_a.id, "ci", title="abc")

    response = alice_client.get(reverse("todo_list"), params)

    assert rows(response) == []
    assert said in alert(response), alert(response)
    assert "all 0</span>" in response.content.decode()


def test_an_unknown_sort_is_said_and_the_list_is_newest_first(
    alice_client: Client, personas: Personas
) -> None:
    old = new_todo(personas.endpoint_a.id, title="a").id
    new = new_todo(personas.endpoint_a.id, title="b").id
    set_created_at(old, 10)

    response = alice_client.get(reverse("todo_list"), {"sort": "colour\x00"})

    assert rows(response) == [new, old]
    assert "Unknown sort" in alert(response)


def _pages(client: Client, params: dict[str, str]) -> list[list[str]]:
    pages: list[list[str]] = []
    while len(pages) < 10:
        response = client.get(reverse("todo_list"), params)
        pages.append(rows(response))
        following = NEXT_LINK.search(response.content.decode())
        if following is None:
            return pages
        params = dict(parse_qsl(html.unescape(following.group(1))))
    raise AssertionError("the pages never ended")


def test_pages_keep_the_sort_and_the_search(
    alice_client: Client, personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queries, "PAGE_SIZE", 2)
    titles = ["delta match", "alpha match", "echo match", "bravo match", "charlie match"]
    made = {title: new_todo(personas.endpoint_a.id, title=title).id for title in titles}
    new_todo(personas.endpoint_a.id, title="alpha other")

    pages = _pages(alice_client, {"q": "match", "sort": "title"})

    assert [len(page) for page in pages] == [2, 2, 1]
    assert [i for page in pages for i in page] == [made[t] for t in sorted(titles)]


def test_a_column_header_sorts_by_it_and_a_second_click_turns_it_round(
    alice_client: Client, personas: Personas
) -> None:
    b = new_todo(personas.endpoint_a.id, title="b").id
    a = new_todo(personas.endpoint_a.id, title="a").id
    url = reverse("todo_list")
    header = re.compile(r'<a href="\?([^"]*)" class="sort">Todo</a>')

    first = header.search(alice_client.get(url, {"q": "a"}).content.decode())
    assert first is not None
    params = dict(parse_qsl(html.unescape(first.group(1))))
    assert params == {"q": "a", "sort": "title"}  # the filters are kept, "a" is too short
    ascending = alice_client.get(url, {"sort": "title"})
    assert rows(ascending) == [a, b]
    again = header.search(ascending.content.decode())
    assert again is not None
    assert rows(alice_client.get(url, dict(parse_qsl(html.unescape(again.group(1)))))) == [b, a]


def test_a_search_makes_the_same_queries_as_the_plain_list(
    alice_client: Client,
    personas: Personas,
    django_assert_num_queries: Callable[..., Any],
) -> None:
    for n in range(5):
        new_todo(personas.endpoint_a.id, title=f"match {n}")
    # session, user, the page, the counts, the paused queues, the endpoint filter's options,
    # the rail's unread count: as the plain list (tests/board/test_todo_list.py)
    with django_assert_num_queries(7):
        assert len(rows(alice_client.get(reverse("todo_list"), {"q": "match", "sort": "title"})))
