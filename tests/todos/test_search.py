"""The list's filters beyond endpoint, queue and state (todos.queries.TodoFilters): search by id,
title and payload text, a queue prefix, a created range, sorts with their own keyset cursor,
the owner scope under each, and what is said of filters that cannot be read."""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Callable

import pytest

from switchboard.scope import Scope
from tests.base import Personas
from tests.factories import EndpointFactory
from tests.reach import BOT, claimed, new_todo, set_created_at
from todos import lifecycle, queries
from todos.models import Todo
from todos.queries import Cursor, TodoFilters

pytestmark = pytest.mark.django_db


def ids(scope: Scope, filters: TodoFilters) -> list[str]:
    return [t.id for t in queries.todo_page(scope, filters).todos]


def walk(scope: Scope, filters: TodoFilters, size: int = 2) -> list[str]:
    """Every page of ``filters``, the cursors travelling as text as they do on both surfaces."""
    seen: list[str] = []
    after = None
    for _ in range(100):
        page = queries.todo_page(scope, filters, after, size=size)
        seen += [t.id for t in page.todos]
        if page.next_cursor is None:
            return seen
        after = Cursor.decode(page.next_cursor.encode())
        assert after is not None
    raise AssertionError("the pages never ended")


@pytest.fixture
def alice(personas: Personas) -> Scope:
    return Scope.of_human(personas.alice.id)


# --- search ------------------------------------------------------------------------------------


def test_search_finds_text_in_the_title_case_insensitively(
    personas: Personas, alice: Scope
) -> None:
    hit = new_todo(personas.endpoint_a.id, title="Login REDIRECTS in a loop").id
    new_todo(personas.endpoint_a.id, title="Checkout is slow")

    assert ids(alice, TodoFilters(q="redirects")) == [hit]
    assert ids(alice, TodoFilters(q="in a loop")) == [hit]


def test_search_finds_string_values_at_any_depth_of_the_payload(
    personas: Personas, alice: Scope
) -> None:
    payload = {"check_run": {"name": "test (3.12)", "output": ["flaky", {"why": "segfault"}]}}
    hit = new_todo(personas.endpoint_a.id, payload=payload).id
    new_todo(personas.endpoint_a.id, payload={"segfault_count": 3, "n": 5})  # keys and numbers

    assert ids(alice, TodoFilters(q="segfault")) == [hit]
    assert ids(alice, TodoFilters(q="test (3.12)")) == [hit]


def test_search_reads_only_the_first_characters_of_a_huge_payload(
    personas: Personas, alice: Scope
) -> None:
    early = "needle-early"
    late = "needle-late"
    # jsonb orders keys shorter first: "a" comes before the long filler, "zz…" after it.
    payload = {"a": early, "filler": "x" * 5000, "zzzzzzzz": late}
    todo = new_todo(personas.endpoint_a.id, payload=payload).id

    assert ids(alice, TodoFilters(q=early)) == [todo]
    assert ids(alice, TodoFilters(q=late)) == []


def test_search_takes_like_wildcards_literally(personas: Personas, alice: Scope) -> None:
    hit = new_todo(personas.endpoint_a.id, title="100% done_now").id
    new_todo(personas.endpoint_a.id, title="100 percent doneXnow")

    assert ids(alice, TodoFilters(q="100%")) == [hit]
    assert ids(alice, TodoFilters(q="done_now")) == [hit]


def test_a_whole_todo_id_finds_that_todo_and_part_of_one_finds_it_too(
    personas: Personas, alice: Scope
) -> None:
    todo = new_todo(personas.endpoint_a.id, title="one").id
    mentions = new_todo(personas.endpoint_a.id, title="other", payload={"see": todo}).id

    assert ids(alice, TodoFilters(q=todo)) == [todo]  # the id alone, through todos_pkey
    assert set(ids(alice, TodoFilters(q=todo[:12]))) == {todo, mentions}


def test_bob_never_finds_alices_todos_even_by_exact_id(personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id, title="alice's secret plan").id
    for bob in (Scope.of_human(personas.bob.id), Scope.of_endpoint(personas.endpoint_b.id)):
        assert ids(bob, TodoFilters(q=todo)) == []
        assert ids(bob, TodoFilters(q="secret plan")) == []
        assert queries.state_counts(bob, TodoFilters(q="secret plan"))["all"] == 0


def test_search_combines_with_the_other_filters_and_the_counts_follow_it(
    personas: Personas, alice: Scope
) -> None:
    pending = new_todo(personas.endpoint_a.id, "ci", title="deploy failed").id
    running = claimed(personas.endpoint_a.id, "ci", owner=BOT, title="deploy hung").todo.id
    new_todo(personas.endpoint_a.id, "docs", title="deploy docs")
    new_todo(personas.endpoint_a.id, "ci", title="unrelated")

    assert set(ids(alice, TodoFilters(q="deploy", queue="ci"))) == {pending, running}
    assert ids(alice, TodoFilters(q="deploy", queue="ci", state="claimed")) == [running]
    counts = queries.state_counts(alice, TodoFilters(q="deploy", queue="ci", state="claimed"))
    assert (counts["all"], counts["pending"], counts["claimed"]) == (2, 1, 1)


def test_search_pages_follow_each_other_in_every_sort(personas: Personas, alice: Scope) -> None:
    made = [new_todo(personas.endpoint_a.id, title=f"match {n}").id for n in range(5)]
    new_todo(personas.endpoint_a.id, title="other")
    for age, todo_id in enumerate(made):
        set_created_at(todo_id, 100 - age)

    assert walk(alice, TodoFilters(q="match")) == list(reversed(made))
    assert walk(alice, TodoFilters(q="match", sort="created")) == made
    assert walk(alice, TodoFilters(q="match", sort="-title")) == list(reversed(made))


# --- queue prefix, created range ---------------------------------------------------------------


def test_a_queue_prefix_takes_every_queue_starting_with_it(
    personas: Personas, alice: Scope
) -> None:
    lint = new_todo(personas.endpoint_a.id, "ci-lint").id
    test = new_todo(personas.endpoint_a.id, "ci-test").id
    new_todo(personas.endpoint_a.id, "cicd")
    new_todo(personas.endpoint_a.id, "docs-ci-")

    filters = TodoFilters.parse({"queue": "ci-*"})

    assert (filters.queue, filters.queue_prefix) == ("", "ci-")
    assert set(ids(alice, filters)) == {lint, test}
    assert filters.to_params() == {"queue": "ci-*"}
    assert queries.state_counts(alice, filters)["all"] == 2


def test_the_created_range_takes_whole_utc_days_both_ends_included(
    personas: Personas, alice: Scope
) -> None:
    today = dt.datetime.now(dt.UTC).date()
    made = {days: new_todo(personas.endpoint_a.id, title=f"{days} days").id for days in (0, 1, 3)}
    for days, todo_id in made.items():
        # Noon of that day, so the test does not depend on the hour it runs at.
        moment = dt.datetime.combine(today - dt.timedelta(days=days), dt.time(12), dt.UTC)
        Todo.objects.filter(id=todo_id).update(created_at=moment)
    day = (today - dt.timedelta(days=1)).isoformat()
    three = (today - dt.timedelta(days=3)).isoformat()

    assert ids(alice, TodoFilters(created_from=day, created_to=day)) == [made[1]]
    assert ids(alice, TodoFilters(created_from=day)) == [made[0], made[1]]
    assert ids(alice, TodoFilters(created_to=day)) == [made[1], made[3]]
    assert ids(alice, TodoFilters(created_from=three, created_to="9999-12-31")) == [
        made[0],
        made[1],
        made[3],
    ]


# --- sorts -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sort", "key"),
    [
        ("title", lambda t: (t.title, t.created_at, t.id)),
        ("state", lambda t: (t.state, t.created_at, t.id)),
        ("queue", lambda t: (t.queue, t.created_at, t.id)),
        ("updated", lambda t: (t.updated_at, t.created_at, t.id)),
        ("created", lambda t: (t.created_at, t.id)),
    ],
)
def test_every_sort_pages_through_every_todo_once_in_either_direction(
    personas: Personas, alice: Scope, sort: str, key: Callable[[Todo], tuple[object, ...]]
) -> None:
    other = EndpointFactory(owner=personas.alice, slug="agent-a2")
    made = []
    for n in range(7):
        endpoint = personas.endpoint_a.id if n % 2 else other.id
        # Repeated titles, states and queues: the ties are broken by created_at, then id.
        made.append(new_todo(endpoint, f"q{n % 3}", title=f"t{n % 2}").id)
    lifecycle.claim(other.id, made[0], owner=BOT)
    for n, todo_id in enumerate(made):
        set_created_at(todo_id, 100 - (n // 2))  # pairs share a created_at
    todos = list(Todo.objects.filter(id__in=made))

    for descending in (False, True):
        expected = [t.id for t in sorted(todos, key=key, reverse=descending)]
        order = f"-{sort}" if descending else sort
        assert walk(alice, TodoFilters(sort=order)) == expected, order
        # The endpoint's own scope (MCP) pages the same way over its share.
        mine = [i for i in expected if i in set(ids(Scope.of_endpoint(other.id), TodoFilters()))]
        assert walk(Scope.of_endpoint(other.id), TodoFilters(sort=order)) == mine


def test_sorted_by_finished_the_unfinished_come_last_either_way(
    personas: Personas, alice: Scope
) -> None:
    ep = personas.endpoint_a.id
    first = claimed(ep, owner=BOT).todo.id
    lifecycle.complete(ep, first, owner=BOT)
    second = claimed(ep, owner=BOT).todo.id
    lifecycle.complete(ep, second, owner=BOT)
    Todo.objects.filter(id=first).update(finished_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    older, newer = new_todo(ep).id, new_todo(ep).id
    set_created_at(older, 5)
    # The unfinished among themselves: by created_at, in the sort's direction (the cursor after
    # one of them carries the sentinel key).
    assert walk(alice, TodoFilters(sort="-finished"), size=1) == [second, first, newer, older]
    assert walk(alice, TodoFilters(sort="finished"), size=1) == [first, second, older, newer]


def test_a_cursor_of_another_sort_starts_from_the_top(personas: Personas, alice: Scope) -> None:
    for n in range(3):
        new_todo(personas.endpoint_a.id, title=f"t{n}")
    by_title = queries.todo_page(alice, TodoFilters(sort="title"), size=1)
    assert by_title.next_cursor is not None

    newest = queries.todo_page(alice, TodoFilters(), by_title.next_cursor, size=1)

    assert newest.todos[0].id == queries.todo_page(alice, TodoFilters(), size=1).todos[0].id


def test_the_newest_first_cursor_keeps_its_text() -> None:
    """MCP's next_cursor and A2A's page token from before sorts still decode."""
    moment = dt.datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)
    cursor = Cursor(moment, "td_aaaaaaaaaaaaaaaaaaaa")

    assert (
        cursor.encode()
        == "WyIyMDI2LTA1LTAxVDEyOjAwOjAwLjEyMzQ1NloiLCJ0ZF9hYWFhYWFhYWFhYWFhYWFhYWFhYSJd"
    )
    assert Cursor.decode(cursor.encode()) == cursor


@pytest.mark.parametrize(
    "value",
    [
        ["2026-05-01T12:00:00Z", "td_a", "title"],  # three parts
        ["2026-05-01T12:00:00Z", "td_a", "colour", "x"],  # no such sort
        ["2026-05-01T12:00:00Z", "td_a", "-updated", "yesterday"],  # a time key that is not one
        ["2026-05-01T12:00:00Z", "td_a", "title", "a\u0000b"],  # PostgreSQL text cannot hold it
        ["2026-05-01T12:00:00Z", "td_a", "title", 5],
        ["2026-05-01T12:00:00Z", "td_a", "created", "key"],  # created takes no key
    ],
)
def test_a_forged_sorted_cursor_decodes_to_nothing(value: list[object]) -> None:
    text = base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    assert Cursor.decode(text) is None


# --- what cannot be read -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"q": "x" * 201}, "Search is at most 200 characters (201 given)."),
        ({"q": "ab"}, "Search for three letters or digits in a row, or a whole todo id."),
        ({"q": "a_b-c"}, "Search for three letters or digits in a row, or a whole todo id."),
        ({"q": "nul\x00here"}, "Search"),
        ({"q": "\ud800abc"}, "Search"),
        ({"queue": "ci\x00*"}, "Queue"),
        ({"created_from": "yesterday"}, "Created from: 'yesterday' is not a date (YYYY-MM-DD)."),
        ({"created_to": "2026-02-30"}, "Created to: '2026-02-30' is not a date (YYYY-MM-DD)."),
        ({"created_from": "2026-05-02", "created_to": "2026-05-01"}, "Created from is after"),
    ],
)
def test_a_filter_that_cannot_be_read_says_why_and_matches_nothing(
    personas: Personas, alice: Scope, params: dict[str, str], message: str
) -> None:
    new_todo(personas.endpoint_a.id, "ci", title="abc")
    filters = TodoFilters.parse(params)

    assert filters.matches_nothing
    assert any(error.startswith(message) for error in filters.errors), filters.errors
    assert ids(alice, filters) == []
    assert queries.state_counts(alice, filters)["all"] == 0


def test_an_unknown_sort_says_so_and_lists_newest_first(personas: Personas, alice: Scope) -> None:
    old = new_todo(personas.endpoint_a.id, title="b").id
    new = new_todo(personas.endpoint_a.id, title="a").id
    set_created_at(old, 10)
    filters = TodoFilters.parse({"sort": "colour"})

    assert not filters.matches_nothing and filters.order == "-created"
    assert filters.errors == (
        "Unknown sort: sort by created, updated, finished, title, state, queue, cost"
        " (newest first shown).",
    )
    assert ids(alice, filters) == [new, old]


def test_the_where_fragment_and_the_orm_filter_agree(personas: Personas, alice: Scope) -> None:
    """``where_sql`` (for statements) and ``q_filter`` (for the ORM) are one definition."""
    for n in range(6):
        todo = new_todo(personas.endpoint_a.id, f"ci-{n % 2}", title=f"deploy {n}").id
        set_created_at(todo, n * 86400)
    dead = claimed(personas.endpoint_a.id, "ci-1", owner=BOT, title="deploy dead").todo.id
    lifecycle.fail(personas.endpoint_a.id, dead, owner=BOT, retryable=False)
    yesterday = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=2)).isoformat()
    for filters in (
        TodoFilters(q="deploy", queue_prefix="ci-"),
        TodoFilters(endpoint="agent-a", queue="ci-1", dead_letter=True),
        TodoFilters(created_from=yesterday, state="pending"),
        TodoFilters(q=dead),
    ):
        by_orm = set(Todo.objects.filter(alice.todos(), filters.q_filter()).values_list("id"))
        assert {i for (i,) in by_orm} == set(walk(alice, filters)), filters


def test_a_bulk_action_acts_on_what_the_search_and_the_new_filters_list(
    personas: Personas, alice: Scope
) -> None:
    """The bulk actions take the list's filters whole (``TodoFilters.where``): a search, a
    queue prefix and a created range select for a cancel exactly what the list shows."""
    ep = personas.endpoint_a.id
    shown = [new_todo(ep, f"ci-{n}", title=f"deploy {n}").id for n in range(3)]
    new_todo(ep, "docs", title="deploy docs")  # another queue
    new_todo(ep, "ci-9", title="unrelated")  # no match
    old = new_todo(ep, "ci-1", title="deploy old").id
    set_created_at(old, 3 * 86400)  # before the range
    bobs = new_todo(personas.endpoint_b.id, "ci-1", title="deploy bob").id
    today = dt.datetime.now(dt.UTC).date().isoformat()
    filters = TodoFilters(q="deploy", queue_prefix="ci-", created_from=today)

    count = queries.bulk_count(alice, filters, "cancel", lifecycle.BULK_MAX)
    result = lifecycle.bulk_cancel(personas.alice.id, filters, seen_at=count.seen_at)

    assert set(walk(alice, filters)) == set(shown) == set(result.acted)
    assert count.n == 3
    assert Todo.objects.get(id=old).state == "pending"
    assert Todo.objects.get(id=bobs).state == "pending"


def test_a_bulk_action_on_a_filter_that_cannot_be_read_acts_on_nothing(
    personas: Personas, alice: Scope
) -> None:
    new_todo(personas.endpoint_a.id, "ci", title="abc")
    filters = TodoFilters.parse({"q": "ab"})

    count = queries.bulk_count(alice, filters, "cancel", lifecycle.BULK_MAX)
    result = lifecycle.bulk_cancel(personas.alice.id, filters, seen_at=count.seen_at)

    assert count.n == 0 and not result.acted
