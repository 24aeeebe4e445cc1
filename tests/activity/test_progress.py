"""A todo's progress for get_todo and the MCP App (activity/trail.py, ``progress``): its newest
notes, newest first and bounded, with their attempts; its spans counted; a forgotten todo's
notes without their text; read only for a todo the scoped read returned."""

from __future__ import annotations

import pytest

from activity import forget, trail
from switchboard.lib.errors import TodoNotFound
from switchboard.scope import Scope
from tests.base import Personas
from tests.reach import OWNER, claimed
from todos import lifecycle, queries

pytestmark = pytest.mark.django_db


def test_the_newest_notes_come_newest_first_bounded_with_their_attempts(
    personas: Personas,
) -> None:
    a = personas.endpoint_a.id
    held = claimed(a, "q", max_attempts=3)
    lifecycle.heartbeat(a, held.todo.id, owner=OWNER, note="first try")
    lifecycle.release(a, held.todo.id, owner=OWNER, summary="later")
    lifecycle.claim(a, held.todo.id, owner=OWNER)
    for n in range(trail.NOTES_SHOWN + 2):
        lifecycle.heartbeat(a, held.todo.id, owner=OWNER, note=f"step {n}")
    scope = Scope.of_endpoint(a)

    got = trail.progress(queries.todo_detail(scope, held.todo.id))

    texts = [n.text for n in got.notes]
    assert texts == [f"step {n}" for n in reversed(range(2, trail.NOTES_SHOWN + 2))]
    assert {n.attempt_seq for n in got.notes} == {2}
    assert [n.at for n in got.notes] == sorted((n.at for n in got.notes), reverse=True)
    everything = trail.progress(queries.todo_detail(scope, held.todo.id), notes=100)
    assert everything.notes[-1].text == "first try" and everything.notes[-1].attempt_seq == 1
    assert (got.spans, got.span_errors) == (0, 0)
    # bob's scope never reaches the todo, so never its progress.
    with pytest.raises(TodoNotFound):
        queries.todo_detail(Scope.of_endpoint(personas.endpoint_b.id), held.todo.id)


def test_a_forgotten_todos_notes_keep_their_place_without_their_text(
    personas: Personas,
) -> None:
    a = personas.endpoint_a.id
    held = claimed(a, "q")
    lifecycle.heartbeat(a, held.todo.id, owner=OWNER, note="secret plan")
    lifecycle.complete(a, held.todo.id, owner=OWNER, summary="done")
    assert forget.forget(personas.alice.pk, [held.todo.id]) == (held.todo.id,)

    got = trail.progress(queries.todo_detail(Scope.of_endpoint(a), held.todo.id))

    assert [(n.attempt_seq, n.text) for n in got.notes] == [(1, None)]
