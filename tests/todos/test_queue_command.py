"""manage.py queue pause|resume: the lifecycle's pause_queue/resume_queue, as the system or
``--as`` an operator who owns the endpoint; it prints what it changed."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.base import Personas
from tests.reach import OWNER, new_todo
from todos import lifecycle
from todos.models import QueuePause

pytestmark = pytest.mark.django_db


def queue(*args: str) -> str:
    out = io.StringIO()
    call_command("queue", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_pause_then_resume_as_the_system(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep, "triage").id

    assert queue("pause", "--endpoint=agent-a", "--queue=triage") == (
        "Paused queue 'triage' of agent-a.\n"
    )
    assert lifecycle.claim_next(ep, ["triage"], owner=OWNER) is None
    assert queue("pause", "--endpoint=agent-a", "--queue=triage").startswith("Nothing changed")

    assert queue("resume", "--endpoint=agent-a", "--queue=triage") == (
        "Resumed queue 'triage' of agent-a.\n"
    )
    claimed = lifecycle.claim_next(ep, ["triage"], owner=OWNER)
    assert claimed is not None and claimed.todo.id == todo_id
    (pause,) = QueuePause.objects.all()
    assert (pause.paused_by_kind, pause.paused_by) == ("system", "command:queue")
    assert (pause.resumed_by_kind, pause.resumed_by) == ("system", "command:queue")


def test_as_an_operator_records_them(personas: Personas) -> None:
    queue("pause", "--endpoint=agent-a", "--queue=triage", "--as=alice")

    (pause,) = QueuePause.objects.all()
    assert (pause.paused_by_kind, pause.paused_by) == ("human", f"human:{personas.alice.id}")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--endpoint=nobody", "--queue=triage"], "no endpoint with slug 'nobody'"),
        (["--endpoint=agent-a", "--queue=triage", "--as=ghost"], "no operator named 'ghost'"),
        (["--endpoint=agent-a", "--queue=triage", "--as=bob"], "bob does not own"),
        (["--endpoint=agent-a", "--queue=a\x00b"], "refused: queue"),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(
    personas: Personas, args: list[str], message: str
) -> None:
    with pytest.raises(CommandError, match=message):
        queue("pause", *args)

    assert not QueuePause.objects.exists()
