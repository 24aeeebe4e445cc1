"""manage.py schedule: todos/schedules.py from the shell; ``--as`` scopes it to an operator."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.base import Personas
from todos import schedules
from todos.models import Schedule, Todo

pytestmark = pytest.mark.django_db


def schedule(*args: str) -> str:
    out = io.StringIO()
    call_command("schedule", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


ADD = ["add", "--endpoint=agent-a", "--queue=reports", "--title=Report {date}"]


def test_add_prints_the_id_and_the_next_five_runs(personas: Personas) -> None:
    out = schedule(*ADD, "--cron=0 9 * * *", "--timezone=Europe/Berlin", '--payload={"a": 1}')

    (added,) = Schedule.objects.all()
    lines = out.splitlines()
    assert lines[0] == f"Added schedule {added.pk}. Next runs (Europe/Berlin):"
    assert len(lines) == 6
    assert all("T09:00:00+0" in line for line in lines[1:])
    assert added.payload_template == {"a": 1} and added.created_by is None


def test_add_as_an_operator_records_them(personas: Personas) -> None:
    schedule(*ADD, "--cron=* * * * *", "--as=alice")
    assert Schedule.objects.get().created_by == personas.alice


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cron=61 * * * *"], "refused: cron: Bad minute"),
        (["--cron=0 0 30 2 *"], "refused: cron: Bad day-of-month"),
        (["--cron=* * * * *", "--timezone=Nowhere/City"], "refused: timezone: unknown time zone"),
        (["--cron=* * * * *", "--payload={oops"], "refused: payload: is not JSON"),
        (["--cron=* * * * *", "--payload=[1]"], "refused: payload: must be a JSON object"),
        (["--cron=* * * * *", "--missed=later"], "refused: missed: must be one of"),
        (["--cron=* * * * *", "--as=bob"], "refused: endpoint: no endpoint with slug 'agent-a'"),
        (["--cron=* * * * *", "--as=ghost"], "no operator named 'ghost'"),
    ],
)
def test_bad_input_exits_with_one_line_naming_the_field(
    personas: Personas, args: list[str], message: str
) -> None:
    with pytest.raises(CommandError) as caught:
        schedule(*ADD, *args)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert not Schedule.objects.exists()


def test_list_is_scoped_with_as(personas: Personas) -> None:
    mine = schedules.add(personas.endpoint_a, queue="a", cron="* * * * *", title="A")
    theirs = schedules.add(personas.endpoint_b, queue="b", cron="* * * * *", title="B")

    rows = json.loads(schedule("list", "--json"))
    assert [row["id"] for row in rows] == [mine.pk, theirs.pk]
    rows = json.loads(schedule("list", "--json", "--as=bob"))
    assert [(row["id"], row["endpoint"]) for row in rows] == [(theirs.pk, "agent-b")]
    assert schedule("list", "--endpoint=agent-a").startswith(f"{mine.pk}  agent-a/a")
    assert schedule("list", "--as=bob", "--endpoint=agent-a") == ""


def test_pause_resume_run_now_remove(personas: Personas) -> None:
    added = schedules.add(personas.endpoint_a, queue="a", cron="0 9 * * *", title="A")
    pk = str(added.pk)

    assert schedule("pause", pk) == f"Paused schedule {pk}.\n"
    assert schedule("pause", pk) == f"Schedule {pk} was paused.\n"
    assert schedule("resume", pk).startswith(f"Resumed schedule {pk}; next run ")
    out = schedule("run-now", pk, "--as=alice")
    (todo,) = Todo.objects.all()
    assert out == f"Created {todo.id}.\n"
    assert schedule("remove", pk) == f"Removed schedule {pk}; the todos it created stay.\n"
    assert not Schedule.objects.exists() and Todo.objects.exists()


@pytest.mark.parametrize("action", ["pause", "resume", "run-now", "remove"])
def test_another_operators_schedule_reads_as_unknown(personas: Personas, action: str) -> None:
    added = schedules.add(personas.endpoint_a, queue="a", cron="0 9 * * *", title="A")
    with pytest.raises(CommandError, match="refused: schedule: unknown schedule"):
        schedule(action, str(added.pk), "--as=bob")
    with pytest.raises(CommandError, match="refused: schedule: unknown schedule"):
        schedule(action, "999999")
    added.refresh_from_db()
    assert added.enabled and not Todo.objects.exists()
