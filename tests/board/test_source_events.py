"""A source's events on its page beyond the newest 20: pages newest first, a search by delivery
id or rejected body text, a disposition filter, bad input said on the page, another human's
source still a 404."""

from __future__ import annotations

import datetime as dt
import html
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

import pytest
from django.test import Client
from django.urls import reverse

from tests.base import Personas
from tests.board.test_sources import deliver, github_source
from todos.intake import source_views as board
from todos.models import Event

pytestmark = pytest.mark.django_db

DELIVERY = re.compile(r'<span class="mono">(d-[\w-]+)</span>')
OLDER = re.compile(r'href="\?([^"#]*)#events" rel="next"')
ALERT = re.compile(r'<div class="error filter-errors" role="alert">(.*?)</div>', re.S)


def deliveries(response: Any) -> list[str]:
    assert response.status_code == 200
    return DELIVERY.findall(response.content.decode())


def pages(client: Client, params: dict[str, str]) -> list[list[str]]:
    url = reverse("source_detail", args=["github"])
    seen: list[list[str]] = []
    while len(seen) < 10:
        response = client.get(url, params)
        seen.append(deliveries(response))
        older = OLDER.search(response.content.decode())
        if older is None:
            return seen
        params = dict(parse_qsl(html.unescape(older.group(1))))
    raise AssertionError("the pages never ended")


def test_the_events_page_newest_first_past_the_first_twenty(
    alice_client: Client, personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(board, "RECENT_EVENTS", 3)
    github_source(personas)
    for n in range(7):
        deliver("github", delivery=f"d-{n}")
    # One transaction, so one instant for all but these: the id breaks the ties.
    Event.objects.filter(delivery_id__in=["d-0", "d-1"]).update(
        received_at=Event.objects.get(delivery_id="d-0").received_at - dt.timedelta(seconds=5)
    )
    expected = list(
        Event.objects.order_by("-received_at", "-id").values_list("delivery_id", flat=True)
    )

    walked = pages(alice_client, {})

    assert [len(page) for page in walked] == [3, 3, 1]
    assert [d for page in walked for d in page] == expected


def test_events_are_found_by_delivery_id_start_body_text_and_disposition(
    alice_client: Client, personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(board, "RECENT_EVENTS", 2)
    github_source(personas)
    for n in range(3):
        deliver("github", delivery=f"d-build-{n}")
    deliver("github", delivery="d-deploy-1")
    deliver("github", {"marker": "Zebra-Stripes"}, secret="wrong", delivery="d-forged")

    by_id = [d for page in pages(alice_client, {"q": "d-build-"}) for d in page]
    assert by_id == ["d-build-2", "d-build-1", "d-build-0"]
    # A rejected delivery keeps no delivery id: it is found by its body's first bytes.
    url = reverse("source_detail", args=["github"])
    for params in ({"q": "zebra-stripes"}, {"disposition": "rejected"}):
        body = alice_client.get(url, params).content.decode()
        assert body.count('<details class="event">') == 1, params
        assert 'class="badge disp-rejected">rejected</span>' in body
    routed = pages(alice_client, {"disposition": "routed"})
    assert sorted(d for page in routed for d in page) == [
        "d-build-0",
        "d-build-1",
        "d-build-2",
        "d-deploy-1",
    ]
    assert pages(alice_client, {"q": "d-build", "disposition": "rejected"}) == [[]]
    assert (
        "No deliveries match."
        in alice_client.get(
            reverse("source_detail", args=["github"]), {"q": "nothing-like-it"}
        ).content.decode()
    )


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"q": "d-\x00"}, "Search contains"),
        ({"q": "d" * 201}, "Search is at most 200 characters."),
        ({"disposition": "lost"}, "Unknown disposition: choose routed, dropped, rejected,"),
        ({"after": "not-a-cursor", "q": "\x00"}, "Search contains"),
    ],
)
def test_bad_event_filters_are_said_on_the_page_and_match_nothing(
    alice_client: Client, personas: Personas, params: dict[str, str], said: str
) -> None:
    github_source(personas)
    deliver("github", delivery="d-1")

    response = alice_client.get(reverse("source_detail", args=["github"]), params)

    assert deliveries(response) == []
    found = ALERT.search(response.content.decode())
    assert found is not None and said in html.unescape(found.group(1))


def test_a_malformed_cursor_starts_from_the_newest(
    alice_client: Client, personas: Personas
) -> None:
    github_source(personas)
    deliver("github", delivery="d-1")

    for after in ("garbage", "W10", "WyJ4IiwgMV0", "WyIyMDI2LTAxLTAxVDAwOjAwOjAwKzAwOjAwIiwgLTFd"):
        response = alice_client.get(reverse("source_detail", args=["github"]), {"after": after})
        assert deliveries(response) == ["d-1"], after


def test_bob_cannot_page_or_search_alices_events(bob_client: Client, personas: Personas) -> None:
    github_source(personas)
    deliver("github", delivery="d-1")

    response = bob_client.get(reverse("source_detail", args=["github"]), {"q": "d-1"})

    assert response.status_code == 404


def test_a_searched_page_makes_the_same_queries_as_the_first(
    alice_client: Client, personas: Personas, django_assert_num_queries: Callable[..., Any]
) -> None:
    github_source(personas)
    for n in range(25):
        deliver("github", delivery=f"d-{n}")
    first = alice_client.get(reverse("source_detail", args=["github"])).content.decode()
    older = OLDER.search(first)
    assert older is not None
    params = dict(parse_qsl(html.unescape(older.group(1)))) | {"q": "d-"}
    # session, user, the source, its rules, a page of its events, the rail's unread count
    with django_assert_num_queries(6):
        assert (
            len(deliveries(alice_client.get(reverse("source_detail", args=["github"]), params)))
            == 5
        )
