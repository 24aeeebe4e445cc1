"""Cancellation that reaches the holder: when someone else ends the todo it holds (a cancel on
the Board, in bulk, over A2A, from manage.py, or a deadline), the holder's next heartbeat,
complete, fail or release answers TodoEnded (canceled or timed_out, with the reason and who)
instead of a conflict. Only the holder learns it: anyone else, and the holder with a wrong
fence token, still get the plain conflict."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from attempts import fence
from switchboard.scope import Scope
from tests.base import Personas
from tests.reach import OWNER, claimed, new_todo
from todos import lifecycle
from todos.filters import TodoFilters
from todos.models import Todo

pytestmark = pytest.mark.django_db

Report = Callable[..., Any]
REPORTS: dict[str, Report] = {
    "heartbeat": lifecycle.heartbeat,
    "complete": lifecycle.complete,
    "fail": lifecycle.fail,
    "release": lifecycle.release,
}


@pytest.mark.parametrize("name", list(REPORTS))
def test_the_holder_learns_its_todo_was_canceled_on_the_board(
    personas: Personas, name: str
) -> None:
    ep = personas.endpoint_a.id
    got = claimed(ep)
    lifecycle.cancel(Scope.of_human(personas.alice.id), got.todo.id, reason="superseded")

    with pytest.raises(lifecycle.TodoEnded) as ended:
        REPORTS[name](ep, got.todo.id, owner=OWNER)
    assert (ended.value.code, ended.value.reason) == ("canceled", "superseded")
    assert ended.value.by == f"human:{personas.alice.id}"


@pytest.mark.parametrize("name", list(REPORTS))
def test_anyone_else_still_gets_a_conflict(personas: Personas, name: str) -> None:
    ep = personas.endpoint_a.id
    got = claimed(ep)
    lifecycle.cancel(Scope.of_human(personas.alice.id), got.todo.id, reason="superseded")

    with pytest.raises(lifecycle.LeaseConflict):
        REPORTS[name](ep, got.todo.id, owner="someone-else")


@pytest.mark.parametrize("name", list(REPORTS))
def test_the_holder_with_a_wrong_fence_still_gets_a_conflict(personas: Personas, name: str) -> None:
    ep = personas.endpoint_a.id
    got = claimed(ep, require_fence=True)
    lifecycle.cancel(Scope.of_human(personas.alice.id), got.todo.id, reason="superseded")

    with pytest.raises(lifecycle.LeaseConflict):
        REPORTS[name](ep, got.todo.id, owner=OWNER, lease_token=fence.mint()[0])
    with pytest.raises(lifecycle.TodoEnded):
        REPORTS[name](ep, got.todo.id, owner=OWNER, lease_token=got.lease_token)


def test_another_endpoint_still_gets_not_found(personas: Personas) -> None:
    got = claimed(personas.endpoint_a.id)
    lifecycle.cancel(Scope.of_human(personas.alice.id), got.todo.id)
    with pytest.raises(lifecycle.TodoNotFound):
        lifecycle.heartbeat(personas.endpoint_b.id, got.todo.id, owner=OWNER)


def test_a_new_claim_since_makes_it_a_plain_conflict_again(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    got = claimed(ep)
    lifecycle.cancel(Scope.of_human(personas.alice.id), got.todo.id)
    lifecycle.retry(personas.alice.id, got.todo.id)
    lifecycle.claim(ep, got.todo.id, owner="worker-2")
    with pytest.raises(lifecycle.LeaseConflict):
        lifecycle.heartbeat(ep, got.todo.id, owner=OWNER)


def test_a_requesters_cancel_over_a2a_names_the_endpoint(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    got = claimed(ep)
    lifecycle.cancel(Scope.of_endpoint(ep), got.todo.id, reason="not needed")
    with pytest.raises(lifecycle.TodoEnded) as ended:
        lifecycle.heartbeat(ep, got.todo.id, owner=OWNER)
    assert (ended.value.reason, ended.value.by) == ("not needed", f"requester:{ep}")
    # Who, as people read it (switchboard/actors.py): the endpoint's slug, not its id.
    assert ended.value.by_name == f"requester via {personas.endpoint_a.slug}"


def test_a_bulk_cancel_reaches_the_holder(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    got = claimed(ep)
    lifecycle.bulk_cancel(
        personas.alice.id, TodoFilters.parse({}), seen_at=timezone.now(), reason="cleanup"
    )
    with pytest.raises(lifecycle.TodoEnded) as ended:
        lifecycle.release(ep, got.todo.id, owner=OWNER)
    assert ended.value.code == "canceled"


# --- manage.py cancel ----------------------------------------------------------------------


def cancel(*args: str) -> str:
    out = io.StringIO()
    call_command("cancel", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_manage_py_cancel_reaches_the_holder_as_the_system(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    got = claimed(ep)
    out = cancel(got.todo.id, "--reason", "wrong repository")
    assert out.startswith(f"Canceled {got.todo.id}")
    assert Todo.objects.get(pk=got.todo.id).state == "canceled"
    with pytest.raises(lifecycle.TodoEnded) as ended:
        lifecycle.heartbeat(ep, got.todo.id, owner=OWNER)
    assert (ended.value.reason, ended.value.by) == ("wrong repository", "command:cancel")
    assert ended.value.by_name == "command cancel"


def test_manage_py_cancel_as_an_operator_is_scoped_to_their_endpoints(
    personas: Personas,
) -> None:
    todo = new_todo(personas.endpoint_a.id)
    with pytest.raises(CommandError, match="not found"):
        cancel(todo.id, "--reason", "x", "--as", personas.bob.username)
    assert Todo.objects.get(pk=todo.id).state == "pending"
    cancel(todo.id, "--reason", "x", "--as", personas.alice.username)
    assert Todo.objects.get(pk=todo.id).state == "canceled"


def test_manage_py_cancel_of_an_unknown_or_finished_todo_is_one_line_and_exit_1(
    personas: Personas,
) -> None:
    with pytest.raises(CommandError, match=r"^td_aaaaaaaaaaaaaaaaaaaa: not found$"):
        cancel("td_aaaaaaaaaaaaaaaaaaaa", "--reason", "x")
    todo = new_todo(personas.endpoint_a.id)
    cancel(todo.id, "--reason", "x")
    with pytest.raises(CommandError, match="already finished"):
        cancel(todo.id, "--reason", "x")
