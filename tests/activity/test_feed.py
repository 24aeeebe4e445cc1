"""The Activity feed, /activity/: attempt endings and activity rows across the human's todos,
newest first, owner-scoped, filtered, paged by a keyset cursor; and the rail's unread badge.

Under a plain ``django_db`` test PostgreSQL's ``now()`` is one instant for the whole test, so
every entry written by a real transition ties on ``at``: the tie-break is exercised by
default, and tests that need an order in time give ``at`` explicitly.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from activity import feed
from activity.feed import Cursor, FeedFilters, feed_page
from switchboard.lib.sql import fetch_one
from switchboard.models import Human
from tests import reach
from tests.activity.helpers import (
    a2a,
    agent_note,
    board,
    record,
    rung,
    swept_dead_letters,
    swept_retry,
)
from tests.base import Personas
from tests.factories import EndpointFactory
from tests.reach import BOT
from todos import lifecycle

pytestmark = pytest.mark.django_db

Key = tuple[str, str, int]


# The Board's tests reach their states on queue "work", as agent BOT with a claimant.
def new_todo(endpoint_id: Any, queue: str = "work", **create: Any) -> Any:
    return reach.new_todo(endpoint_id, queue, **create)


def claimed(endpoint_id: Any, queue: str = "work", **create: Any) -> str:
    held = reach.claimed(endpoint_id, queue, owner=BOT, claimant="harness/run-1", **create)
    return held.todo.id


def died_then_failed(endpoint_id: Any) -> str:
    return reach.died_then_failed(endpoint_id, "work", owner=BOT).todo.id


def now() -> dt.datetime:
    row = fetch_one("SELECT now() AS now", {})
    assert row is not None
    return row["now"]


def keys(entries: list[feed.FeedEntry]) -> list[Key]:
    return [(e.kind, e.todo_id, e.seq) for e in entries]


def everything(human_id: int, filters: FeedFilters | None = None) -> list[feed.FeedEntry]:
    return feed_page(human_id, filters or FeedFilters(), size=10_000).entries


def busy_alice(personas: Personas) -> dict[str, str]:
    """Alice's todos with one entry of every kind the feed shows, and a ring it does not."""
    a = personas.endpoint_a.id
    done = claimed(a, queue="ci-fix", title="done")
    agent_note(a, done, BOT, "found the flaky test")
    lifecycle.complete(a, done, owner=BOT, summary="fixed it")
    twice = died_then_failed(a)  # reaped, then failed: two endings on queue "work"
    swept_retry(twice)
    by_hand = new_todo(a, queue="triage", title="by hand").id
    rung(by_hand)
    board(personas.alice.id, "claim", by_hand)
    paused = claimed(a, queue="triage")
    a2a(paused, BOT, "interrupt", "claimed", "input-required")
    return {"done": done, "twice": twice, "by_hand": by_hand, "paused": paused}


# --- scope -------------------------------------------------------------------------------------


def test_bobs_feed_never_holds_alices_entries(
    personas: Personas, alice_client: Client, bob_client: Client
) -> None:
    alice = busy_alice(personas)
    bobs = claimed(personas.endpoint_b.id, title="bob's own")
    agent_note(personas.endpoint_b.id, bobs, BOT, "bob's note")
    lifecycle.complete(personas.endpoint_b.id, bobs, owner=BOT)

    assert {e.todo_id for e in everything(personas.bob.id)} == {bobs}
    assert {e.todo_id for e in everything(personas.alice.id)} == set(alice.values())
    body = bob_client.get(reverse("activity")).content.decode()
    assert "bob&#x27;s note" in body
    assert not [todo_id for todo_id in alice.values() if todo_id in body]
    assert "found the flaky test" not in body and "fixed it" not in body


def test_rings_are_left_out_and_every_other_kind_is_in(personas: Personas) -> None:
    busy_alice(personas)

    kinds = {e.kind for e in everything(personas.alice.id)}

    assert kinds == {"attempt_end", "note", "human_action", "retried", "a2a_state"}


def test_an_entry_says_what_happened_and_links_to_its_place_on_the_trail(
    personas: Personas, alice_client: Client
) -> None:
    todos = busy_alice(personas)

    body = alice_client.get(reverse("activity")).content.decode()

    done, twice, by_hand = todos["done"], todos["twice"], todos["by_hand"]
    assert f'href="/todos/{done}#attempt-1-end"' in body
    assert "fixed it" in body and "found the flaky test" in body
    assert f'href="/todos/{twice}#attempt-1-end"' in body
    assert "died: lease expired, reaped" in body and "failed: reported by its holder" in body
    assert '<span class="actor human">alice</span> claimed it' in body
    assert f'href="/todos/{by_hand}#activity-2"' in body  # its ring is seq 1, not shown
    assert "requeued it: its retry was due" in body and "paused it for input" in body
    # Each time carries its zone.
    stamps = re.findall(r'<time class="when mono small" datetime="[^"]+">([^<]+)</time>', body)
    assert stamps and all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", s) for s in stamps)


# --- filters -----------------------------------------------------------------------------------


def test_filters_by_endpoint_queue_kind_and_outcome(personas: Personas) -> None:
    todos = busy_alice(personas)
    other = EndpointFactory(owner=personas.alice, slug="agent-a2")
    elsewhere = claimed(other.id, queue="triage")
    lifecycle.complete(other.id, elsewhere, owner=BOT)
    alice = personas.alice.id

    def todo_ids(**filters: str) -> set[str]:
        return {e.todo_id for e in everything(alice, FeedFilters.parse(**filters))}

    def entries(**filters: str) -> set[Key]:
        return set(keys(everything(alice, FeedFilters.parse(**filters))))

    assert todo_ids(endpoint="agent-a2") == {elsewhere}
    assert todo_ids(queue="triage") == {todos["by_hand"], todos["paused"], elsewhere}
    assert todo_ids(queue="triage", endpoint="agent-a") == {todos["by_hand"], todos["paused"]}
    assert entries(kind="note") == {("note", todos["done"], 1)}
    assert entries(kind="retried") == {("retried", todos["twice"], 1)}
    assert entries(kind="a2a_state") == {("a2a_state", todos["paused"], 1)}
    assert {k for k, _, _ in entries(kind="human_action")} == {"human_action"}
    assert entries(kind="attempt_end", endpoint="agent-a") == {
        ("attempt_end", todos["done"], 1),
        ("attempt_end", todos["twice"], 1),
        ("attempt_end", todos["twice"], 2),
    }
    # An outcome filter is on endings only.
    assert entries(outcome="reaped") == {("attempt_end", todos["twice"], 1)}
    assert entries(outcome="completed") == {
        ("attempt_end", todos["done"], 1),
        ("attempt_end", elsewhere, 1),
    }
    assert entries(outcome="failed", kind="note") == set()
    assert entries(endpoint="agent-b") == set()  # bob's slug: nothing of bob's shows


@pytest.mark.parametrize(
    "query",
    [
        {"kind": "rung"},
        {"kind": "nonsense", "outcome": "nonsense"},
        {"queue": "a\x00b"},
        {"endpoint": "\x00"},
        {"after": "\x00"},
        {"after": "not a cursor"},
        {"after": "W1swXQ"},
        {"after": "WyIyMDI2LTAxLTAxIiwgIm5vdGUiLCAidGRfeCIsIDFd"},
        {"kind": "\x00", "outcome": "\x00\x00", "after": "%00"},
    ],
)
def test_garbage_in_any_parameter_is_never_an_error(
    alice_client: Client, personas: Personas, query: dict[str, str]
) -> None:
    busy_alice(personas)

    response = alice_client.get(reverse("activity"), query)

    assert response.status_code == 200


def test_a_bad_cursor_starts_the_feed_over(alice_client: Client, personas: Personas) -> None:
    busy_alice(personas)
    first = alice_client.get(reverse("activity")).content.decode()

    again = alice_client.get(reverse("activity"), {"after": "garbage"}).content.decode()

    def entry_links(body: str) -> list[str]:
        return re.findall(r'class="todo-link" href="([^"]+)"', body)

    assert entry_links(again) == entry_links(first) and entry_links(first)


def test_a_cursor_round_trips_and_rejects_what_it_did_not_write() -> None:
    cursor = Cursor(dt.datetime(2026, 3, 1, 12, 0, 0, 123456, dt.UTC), "note", "td_" + "a" * 20, 7)

    assert Cursor.decode(cursor.encode()) == cursor
    assert Cursor.decode(cursor.encode()[:-2]) is None
    for kind, todo_id, seq in (
        ("rung", "td_" + "a" * 20, 1),
        ("note", "td_x", 1),
        ("note", "td_" + "a" * 20, -1),
        ("note", "td_" + "a" * 20, True),
    ):
        forged = Cursor(cursor.at, kind, todo_id, seq)  # type: ignore[arg-type]
        assert Cursor.decode(forged.encode()) is None


# --- paging ------------------------------------------------------------------------------------


def test_pages_follow_each_other_without_loss_or_repeats_through_ties(
    personas: Personas,
) -> None:
    a = personas.endpoint_a.id
    base = now()
    ids = [claimed(a) for _ in range(6)]
    for n, todo_id in enumerate(ids):
        # Ties on `at` across kinds and todos: endings (all at now()), notes at three instants.
        for k in range(4):
            record(
                todo_id,
                "note",
                actor_kind="endpoint",
                actor_ref=BOT,
                attempt_seq=1,
                message=f"note {k}",
                at=base - dt.timedelta(seconds=k % 3),
            )
        if n % 2:
            lifecycle.complete(a, todo_id, owner=BOT)
        else:
            board(personas.alice.id, "fail", todo_id, "by hand")
    whole = everything(personas.alice.id)
    assert len(whole) == 6 * 4 + 6 + 3  # notes, endings, Board actions

    for size in (1, 4, 7, 50):
        seen: list[feed.FeedEntry] = []
        after = None
        for _ in range(len(whole) + 1):  # a cursor that does not move fails, not hangs
            page = feed_page(personas.alice.id, after=after, size=size)
            seen += page.entries
            if page.next_cursor is None:
                break
            assert len(page.entries) == size
            after = page.next_cursor
        assert keys(seen) == keys(whole), size
    ats = [e.at for e in whole]
    assert ats == sorted(ats, reverse=True)
    assert len(set(keys(whole))) == len(whole)


def test_the_older_link_pages_through_the_view(
    alice_client: Client, personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(feed, "PAGE_SIZE", 3)
    a = personas.endpoint_a.id
    todo_id = claimed(a)
    for k in range(7):
        agent_note(a, todo_id, BOT, f"step {k}")

    seen: list[str] = []
    url = reverse("activity") + "?kind=note"
    for _ in range(8):
        if not url:
            break
        body = alice_client.get(url).content.decode()
        seen += re.findall(r'<p class="note">(step \d)', body)
        older = re.search(r'<a class="button" href="(\?[^"]+)" rel="next">Older</a>', body)
        url = reverse("activity") + older.group(1).replace("&amp;", "&") if older else ""
        assert "kind=note" in url or not url

    assert sorted(seen) == [f"step {k}" for k in range(7)] and len(seen) == 7


# --- cost --------------------------------------------------------------------------------------


def test_a_page_makes_the_same_queries_for_few_and_many_entries(
    alice_client: Client,
    personas: Personas,
    django_assert_num_queries: Callable[..., Any],
) -> None:
    todo_id = claimed(personas.endpoint_a.id)
    agent_note(personas.endpoint_a.id, todo_id, BOT, "one")
    url = reverse("activity") + "?kind=note"  # filtered: the first page always marks read
    # session, user, the page (names joined), mark read, the endpoint filter's options
    with django_assert_num_queries(5):
        alice_client.get(url)
    for _ in range(60):
        agent_note(personas.endpoint_a.id, todo_id, BOT, "more")
    with django_assert_num_queries(5):
        body = alice_client.get(url).content.decode()
    assert body.count('<li class="feed-entry') == feed.PAGE_SIZE
    older = re.search(r'href="\?([^"]*after=[^"]+)" rel="next"', body)
    assert older
    # A later page marks nothing read; the rail counts instead.
    with django_assert_num_queries(5):
        alice_client.get(reverse("activity") + "?" + older.group(1).replace("&amp;", "&"))


def test_reopening_the_feed_with_nothing_new_writes_nothing(
    alice_client: Client,
    joined_earlier: Personas,
    django_assert_num_queries: Callable[..., Any],
) -> None:
    todo_id = claimed(joined_earlier.endpoint_a.id)
    agent_note(joined_earlier.endpoint_a.id, todo_id, BOT, "one")
    alice = Human.objects.filter(id=joined_earlier.alice.id)
    with django_assert_num_queries(5):  # session, user, page, mark read, endpoints
        alice_client.get(reverse("activity"))
    seen = alice.get().activity_seen_at
    assert seen is not None

    with django_assert_num_queries(4):  # the newest entry is no newer than the last visit
        alice_client.get(reverse("activity"))
    alice.update(activity_seen_at=seen - dt.timedelta(seconds=1))
    with django_assert_num_queries(5):  # now it is: marked read again
        alice_client.get(reverse("activity"))
    assert alice.get().activity_seen_at == seen


# --- the rail's badge ----------------------------------------------------------------------------


@pytest.fixture
def joined_earlier(personas: Personas) -> Personas:
    """Alice joined before this test's transaction began: rows written in a test are stamped
    with the transaction's start, which is earlier than the persona factories' clock."""
    Human.objects.filter(id=personas.alice.id).update(date_joined=now() - dt.timedelta(days=1))
    return personas


def badge(client: Client) -> str | None:
    body = client.get(reverse("endpoint_list")).content.decode()
    match = re.search(r'<span class="badge unread"[^>]*>([^<]+)<', body)
    return match.group(1) if match else None


def test_the_badge_counts_new_entries_and_says_99_plus_above_99(
    alice_client: Client, joined_earlier: Personas
) -> None:
    a = joined_earlier.endpoint_a.id
    todo_id = claimed(a)
    assert badge(alice_client) is None
    for _ in range(99):
        record(todo_id, "note", actor_kind="endpoint", actor_ref=BOT, attempt_seq=1)
    assert badge(alice_client) == "99"

    record(todo_id, "note", actor_kind="endpoint", actor_ref=BOT, attempt_seq=1)
    assert badge(alice_client) == "99+"
    rung(todo_id)  # rings are not in the feed, nor in its count
    lifecycle.complete(a, todo_id, owner=BOT)
    assert badge(alice_client) == "99+"


def test_opening_the_feed_marks_it_read_and_turning_pages_does_not(
    alice_client: Client, joined_earlier: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = joined_earlier.endpoint_a.id
    todo_id = claimed(a)
    record(todo_id, "note", actor_kind="endpoint", actor_ref=BOT, attempt_seq=1)
    record(todo_id, "note", actor_kind="endpoint", actor_ref=BOT, attempt_seq=1)
    assert badge(alice_client) == "2"

    first = alice_client.get(reverse("activity")).content.decode()

    assert 'class="badge unread"' not in first
    seen = Human.objects.get(id=joined_earlier.alice.id).activity_seen_at
    assert seen == now()
    assert badge(alice_client) is None
    # Newer than the visit (a later transaction's rows): counted again, and paging keeps them.
    record(
        todo_id,
        "note",
        actor_kind="endpoint",
        actor_ref=BOT,
        attempt_seq=1,
        at=seen + dt.timedelta(seconds=5),
    )
    assert badge(alice_client) == "1"
    cursor = Cursor(seen, "note", todo_id, 1).encode()
    alice_client.get(reverse("activity"), {"after": cursor})
    assert Human.objects.get(id=joined_earlier.alice.id).activity_seen_at == seen
    assert badge(alice_client) == "1"


def test_the_badge_counts_only_the_humans_own_entries(
    alice_client: Client, bob_client: Client, joined_earlier: Personas
) -> None:
    bobs = claimed(joined_earlier.endpoint_b.id)
    agent_note(joined_earlier.endpoint_b.id, bobs, BOT, "bob's")

    assert badge(alice_client) is None


def test_pages_without_the_rail_do_not_count(
    alice_client: Client,
    joined_earlier: Personas,
    htmx_headers: dict[str, str],
    django_assert_num_queries: Callable[..., Any],
) -> None:
    todo_id = claimed(joined_earlier.endpoint_a.id)

    # session, user, the todo (endpoint joined, with its attempt counts), its attempts: no count
    with django_assert_num_queries(4):
        alice_client.get(reverse("todo_detail", args=[todo_id]), **htmx_headers)


def test_unread_counts_from_the_given_time_up_to_the_cap(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id)
    base = now()
    for k in range(5):
        record(
            todo_id,
            "note",
            actor_kind="endpoint",
            actor_ref=BOT,
            attempt_seq=1,
            at=base - dt.timedelta(minutes=k),
        )

    alice = personas.alice.id
    assert feed.unread_count(alice, base - dt.timedelta(minutes=2, seconds=30)) == 3
    assert feed.unread_count(alice, base) == 0
    assert feed.unread_count(alice, base - dt.timedelta(days=1)) == 5
    assert [feed.badge(n) for n in (0, 1, 99, 100)] == ["", "1", "99", "99+"]


def test_an_ending_names_its_holder_by_the_claimant_label_it_sent(
    personas: Personas, alice_client: Client
) -> None:
    ep = personas.endpoint_a.id
    labelled = reach.claimed(ep, owner=f"endpoint:{ep}", claimant="ci-bot/run-9").todo.id
    lifecycle.complete(ep, labelled, owner=f"endpoint:{ep}")
    bare = reach.claimed(ep, owner=f"endpoint:{ep}").todo.id
    lifecycle.complete(ep, bare, owner=f"endpoint:{ep}")

    entries = {e.todo_id: e for e in feed_page(personas.alice.id, FeedFilters()).entries}
    assert entries[labelled].actor == "ci-bot/run-9"
    assert entries[bare].actor == "endpoint agent-a"
    body = alice_client.get(reverse("activity")).content.decode()
    assert re.search(r'held by (<span class="mono">)?ci-bot/run-9<', body)


def test_the_sweeps_dead_letters_read_as_words_in_the_feed(
    personas: Personas, alice_client: Client
) -> None:
    swept_dead_letters(personas.endpoint_a.id)

    body = alice_client.get(reverse("activity")).content.decode()

    said = re.findall(
        r'<span class="actor">sweeper</span> dead-lettered it: .*?<p class="reason">(.*?)</p>',
        body,
        re.S,
    )
    assert sorted(said) == [
        "It missed its finish-by deadline.",
        "Its cost reached its cap of $0.01 ($0.02 spent).",
        "Nobody claimed it before its start-by deadline.",
    ]
    assert '<span class="badge kind">cost cap</span>' in body
    # The tokens stay on the attempt's end only, its summary as the sweep stored it.
    assert "sweeper dead_letter" not in re.sub(r"<[^>]+>", "", body)
    for token in ("finish_by", "start_by", "max_cost_usd reached"):
        assert f'<p class="reason">{token}</p>' not in body
