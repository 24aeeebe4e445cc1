"""manage.py enqueue: one todo through lifecycle.create; stdout is its id alone."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.base import Personas
from todos import lifecycle
from todos.models import Todo

pytestmark = pytest.mark.django_db


def enqueue(*args: str) -> str:
    out = io.StringIO()
    call_command("enqueue", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_enqueue_prints_the_id_of_a_new_pending_todo(personas: Personas) -> None:
    out = enqueue(
        "--endpoint=agent-a",
        "--queue=triage",
        "--title=Look at #42",
        '--payload={"issue": 42, "labels": ["bug"]}',
        "--work-order=Reproduce it first.",
        "--max-attempts=2",
    )

    todo_id = out.removesuffix("\n")
    assert out == todo_id + "\n"
    todo = Todo.objects.get(pk=todo_id)
    assert (todo.endpoint_id, todo.queue, todo.title, todo.state) == (
        personas.endpoint_a.pk,
        "triage",
        "Look at #42",
        "pending",
    )
    assert todo.payload == {"issue": 42, "labels": ["bug"]}
    assert (todo.work_order, todo.max_attempts, todo.attempt) == ("Reproduce it first.", 2, 0)


def test_enqueue_defaults_to_an_empty_payload_and_five_attempts(personas: Personas) -> None:
    todo = Todo.objects.get(pk=enqueue("--endpoint=agent-b", "--queue=q", "--title=t").strip())

    assert (todo.payload, todo.work_order, todo.max_attempts) == ({}, "", 5)


def test_enqueued_todo_is_claimable_by_its_endpoint(personas: Personas) -> None:
    todo_id = enqueue("--endpoint=agent-a", "--queue=q", "--title=t").strip()

    claim = lifecycle.claim_next(personas.endpoint_a.id, ["q"], owner="worker")

    assert claim is not None and claim.todo.id == todo_id


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--endpoint=agent-a", "--payload={not json"], "--payload is not valid JSON"),
        (["--endpoint=nowhere"], "no endpoint with slug 'nowhere'"),
        (["--endpoint=agent-a", "--max-attempts=0"], "refused: max_attempts: must be between"),
        # Digits as the Board's forms read them: int() took these.
        (["--endpoint=agent-a", "--priority=\u0663"], "must be a whole number"),
        (["--endpoint=agent-a", "--max-attempts=1_0"], "must be a whole number"),
        (["--endpoint=agent-a", "--finish-by=+\u0663m"], "finish_by"),
    ],
)
def test_enqueue_refuses_bad_input_and_creates_nothing(
    personas: Personas, args: list[str], message: str
) -> None:
    with pytest.raises(CommandError, match=message):
        enqueue("--queue=q", "--title=t", *args)

    assert not Todo.objects.exists()


def test_enqueue_refuses_an_empty_queue_name(personas: Personas) -> None:
    with pytest.raises(CommandError, match="refused: queue: must be a non-empty string"):
        enqueue("--endpoint=agent-a", "--queue=", "--title=t")
    assert not Todo.objects.exists()


def test_enqueue_refuses_a_revoked_endpoint(personas: Personas) -> None:
    lifecycle.revoke_endpoint(personas.bob.id, personas.endpoint_b.id)

    with pytest.raises(CommandError, match="endpoint 'agent-b' is revoked"):
        enqueue("--endpoint=agent-b", "--queue=q", "--title=t")
    assert not Todo.objects.exists()


def test_enqueue_sets_the_todos_time_from_instants_and_offsets(personas: Personas) -> None:
    out = enqueue(
        "--endpoint=agent-a",
        "--queue=triage",
        "--title=Timed",
        "--priority=7",
        "--not-before=+90s",
        "--start-by=+10m",
        "--finish-by=2999-01-02T03:04:05Z",
        "--run-timeout=600",
        "--dedupe-key=pr-42",
    )
    todo = Todo.objects.get(pk=out.strip())
    assert (todo.priority, todo.run_timeout_seconds, todo.dedupe_key) == (7, 600, "pr-42")
    assert todo.not_before is not None and todo.start_by is not None
    assert 500 < (todo.start_by - todo.not_before).total_seconds() < 520
    assert todo.finish_by is not None and todo.finish_by.year == 2999


def test_enqueue_with_a_held_dedupe_key_prints_the_first_todo(personas: Personas) -> None:
    first = enqueue("--endpoint=agent-a", "--queue=q", "--title=a", "--dedupe-key=k").strip()
    err = io.StringIO()
    out = io.StringIO()
    call_command(
        "enqueue",
        "--endpoint=agent-a",
        "--queue=q",
        "--title=b",
        "--dedupe-key=k",
        stdout=out,
        stderr=err,
    )
    assert out.getvalue().strip() == first
    assert "deduplicated" in err.getvalue()


@pytest.mark.parametrize(
    ("option", "field"),
    [
        ("--priority=1001", "priority"),
        ("--start-by=2001-01-01T00:00:00Z", "start_by"),
        ("--finish-by=+0s", "finish_by"),
        ("--finish-by=tomorrow", "finish_by"),
        ("--not-before=2030-01-01T00:00:00", "not_before"),
        ("--run-timeout=9", "run_timeout_seconds"),
    ],
)
def test_enqueue_refuses_bad_time_in_one_line_naming_the_field(
    personas: Personas, option: str, field: str
) -> None:
    with pytest.raises(CommandError, match=rf"^refused: {field}: "):
        enqueue("--endpoint=agent-a", "--queue=q", "--title=t", option)
    assert not Todo.objects.exists()
