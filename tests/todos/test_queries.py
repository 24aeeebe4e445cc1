"""The owner-scoped reads serve both sides of the scope: the Board's (a human) and MCP's (an
endpoint) get the same answers from the same functions, and neither sees a foreign todo."""

from __future__ import annotations

import base64
import datetime as dt

import pytest

from switchboard.lib.errors import TodoNotFound
from switchboard.scope import Scope
from tests.base import Personas
from tests.factories import EndpointFactory, RuleFactory, SourceFactory
from tests.reach import OWNER, claimed, expire_lease, new_todo, set_created_at
from todos import lifecycle, queries
from todos.queries import Cursor, TodoFilters

pytestmark = pytest.mark.django_db


def test_a_cursor_reads_back_what_it_encoded_to_the_microsecond() -> None:
    at = dt.datetime(2026, 3, 1, 12, 30, 45, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    cursor = Cursor(at, "td_aaaaaaaaaaaaaaaaaaaa")

    assert Cursor.decode(cursor.encode()) == cursor


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not-a-cursor",
        "garbage",
        "é",
        _b64('{"a": 1}'),
        _b64('["2026-03-01T12:00:00Z"]'),
        _b64('["2026-03-01T12:00:00", "td_x"]'),  # no time zone
        _b64('["yesterday", "td_x"]'),
        _b64('["2026-03-01T12:00:00Z", ""]'),
        _b64('["2026-03-01T12:00:00Z", 7]'),
    ],
)
def test_text_no_cursor_was_encoded_to_decodes_to_none(text: str) -> None:
    assert Cursor.decode(text) is None


def test_an_endpoint_and_its_human_page_through_the_same_todos(personas: Personas) -> None:
    ep = personas.endpoint_a
    ids = [new_todo(ep.id, queue="ci").id for _ in range(5)]
    for age, todo_id in enumerate(ids):
        set_created_at(todo_id, 100 - age)
    new_todo(EndpointFactory(owner=personas.alice, slug="agent-a2").id, queue="ci")
    new_todo(personas.endpoint_b.id, queue="ci")  # bob's: neither side sees it

    def walk(scope: Scope, filters: TodoFilters) -> list[str]:
        seen: list[str] = []
        after = None
        while True:
            page = queries.todo_page(scope, filters, after, size=2)
            seen += [t.id for t in page.todos]
            if page.next_cursor is None:
                return seen
            # Cursors travel as text, on both surfaces.
            after = Cursor.decode(page.next_cursor.encode())

    as_endpoint = walk(Scope.of_endpoint(ep.id), TodoFilters(queue="ci"))
    as_human = walk(Scope.of_human(personas.alice.id), TodoFilters(endpoint=ep.slug, queue="ci"))

    assert as_endpoint == as_human == list(reversed(ids))


def test_the_list_filters_dead_letters_and_states_on_either_side(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    dead = claimed(ep).todo.id
    lifecycle.fail(ep, dead, owner=OWNER, retryable=False)
    retrying = claimed(ep).todo.id
    lifecycle.fail(ep, retrying, owner=OWNER, retryable=True)

    for scope in (Scope.of_endpoint(ep), Scope.of_human(personas.alice.id)):
        dead_letters = queries.todo_page(scope, TodoFilters(dead_letter=True)).todos
        failed = queries.todo_page(scope, TodoFilters(state="failed")).todos
        assert [t.id for t in dead_letters] == [dead]
        assert {t.id for t in failed} == {dead, retrying}


def test_the_detail_read_is_the_todo_and_its_attempts_newest_first(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    lifecycle.release(ep, todo_id, owner=OWNER)
    lifecycle.claim(ep, todo_id, owner=OWNER)

    for scope in (Scope.of_endpoint(ep), Scope.of_human(personas.alice.id)):
        detail = queries.todo_detail(scope, todo_id, attempts_limit=1)
        assert detail.todo.id == todo_id and detail.todo.endpoint.slug == "agent-a"
        assert [a.seq for a in detail.history.attempts] == [2]
        assert (detail.history.total, detail.history.pruned) == (2, 0)


def test_a_foreign_todo_reads_exactly_like_an_unknown_one(personas: Personas) -> None:
    bobs = new_todo(personas.endpoint_b.id).id

    for scope in (Scope.of_endpoint(personas.endpoint_a.id), Scope.of_human(personas.alice.id)):
        for todo_id in (bobs, "td_aaaaaaaaaaaaaaaaaaaa"):
            with pytest.raises(TodoNotFound):
                queries.todo_detail(scope, todo_id)
        assert queries.todo_page(scope, TodoFilters()).todos == []
        assert sum(queries.queue_summary(scope, "default").counts.values()) == 0


def test_a_queue_summary_counts_what_a_claim_would_take(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    new_todo(ep)
    expire_lease(claimed(ep).todo.id)  # a takeover would take it
    claimed(ep)  # a live lease: no
    lifecycle.fail(ep, claimed(ep).todo.id, owner=OWNER, retryable=True)  # retry not yet due

    for scope in (Scope.of_endpoint(ep), Scope.of_human(personas.alice.id)):
        summary = queries.queue_summary(scope, "default")
        assert summary.claimable == 2
        assert summary.counts == {
            "pending": 1,
            "claimed": 2,
            "input-required": 0,
            "auth-required": 0,
            "completed": 0,
            "failed": 1,
            "canceled": 0,
            "rejected": 0,
        }
        assert summary.oldest_pending_at is not None


def test_listed_queues_are_the_routed_ones_and_those_with_unfinished_todos(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    RuleFactory(source=SourceFactory(owner=personas.alice), endpoint=personas.endpoint_a, queue="r")
    new_todo(ep, queue="waiting")
    paused = claimed(ep, queue="paused").todo.id
    lifecycle.interrupt(ep, paused, owner=OWNER, state="input-required")
    dead = claimed(ep, queue="dead").todo.id
    lifecycle.fail(ep, dead, owner=OWNER, retryable=False)
    lifecycle.complete(ep, claimed(ep, queue="done").todo.id, owner=OWNER)
    new_todo(personas.endpoint_b.id, queue="bobs")

    for scope in (Scope.of_endpoint(ep), Scope.of_human(personas.alice.id)):
        assert queries.listed_queues(scope) == ["paused", "r", "waiting"]
    assert queries.listed_queues(Scope.of_endpoint(ep), limit=2) == ["paused", "r"]
