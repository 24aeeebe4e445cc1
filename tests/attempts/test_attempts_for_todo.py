"""attempts_for_todo: a todo's history newest first, owner-scoped."""

from __future__ import annotations

import pytest

from switchboard.lib.errors import InvalidInput, TodoNotFound
from switchboard.scope import Scope
from tests.base import Personas
from tests.reach import claimed, expire_lease, make_retry_due, reclaim
from todos import lifecycle
from todos.queries import attempts_for_todo


@pytest.mark.django_db
def test_attempts_come_newest_first_with_the_open_one(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    c = claimed(ep)
    lifecycle.fail(ep, c.todo.id, owner="worker-1", summary="first try", retry_after_seconds=1)
    # Make the retry due, then claim again and let that lease die and be taken over.
    make_retry_due(c.todo.id)
    reclaim(ep, c.todo.id)
    expire_lease(c.todo.id)
    reclaim(ep, c.todo.id, owner="worker-2")

    page = attempts_for_todo(Scope.of_endpoint(ep), c.todo.id)

    assert [a.seq for a in page.attempts] == [3, 2, 1]
    assert page.attempts[0].is_open
    assert page.attempts[0].owner == "worker-2"
    assert page.attempts[1].outcome == "lease_expired"
    assert page.attempts[1].died
    assert page.attempts[2].outcome == "failed"
    assert not page.attempts[2].died
    assert page.attempts[2].summary == "first try"
    assert (page.total, page.pruned) == (3, 0)


@pytest.mark.django_db
def test_the_limit_keeps_the_newest(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    c = claimed(ep)
    for owner in ("w2", "w3"):
        expire_lease(c.todo.id)
        reclaim(ep, c.todo.id, owner=owner)

    page = attempts_for_todo(Scope.of_human(personas.alice.id), c.todo.id, limit=2)

    assert [a.seq for a in page.attempts] == [3, 2]
    assert page.total == 3


@pytest.mark.django_db
def test_a_foreign_todo_is_not_found_like_an_unknown_one(personas: Personas) -> None:
    c = claimed(personas.endpoint_a.id)

    with pytest.raises(TodoNotFound):
        attempts_for_todo(Scope.of_endpoint(personas.endpoint_b.id), c.todo.id)
    with pytest.raises(TodoNotFound):
        attempts_for_todo(Scope.of_human(personas.bob.id), c.todo.id)
    with pytest.raises(TodoNotFound):
        attempts_for_todo(Scope.of_human(personas.alice.id), "td_" + "a" * 20)


@pytest.mark.django_db
@pytest.mark.parametrize("limit", [0, 201, True, "5"])
def test_a_bad_limit_is_invalid(personas: Personas, limit: object) -> None:
    c = claimed(personas.endpoint_a.id)

    with pytest.raises(InvalidInput):
        attempts_for_todo(Scope.of_endpoint(personas.endpoint_a.id), c.todo.id, limit)  # type: ignore[arg-type]
