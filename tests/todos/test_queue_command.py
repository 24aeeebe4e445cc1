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


# --- queue set / show: the lifecycle's set_queue_limits and queries.queue_limits -------------


def test_set_then_show_limits_as_the_system(personas: Personas) -> None:
    out = queue(
        "set", "--endpoint=agent-a", "--queue=triage", "--max-in-flight=3", "--run-timeout=600"
    )
    assert out == (
        "Set queue 'triage' of agent-a: max_in_flight 3, claims_per_minute none,"
        " run_timeout 600 s, max_cost_usd none, daily_budget_usd none.\n"
    )
    queue("set", "--endpoint=agent-a", "--queue=triage", "--max-in-flight=none")

    assert queue("show") == (
        "agent-a triage: max_in_flight none, claims_per_minute none, run_timeout 600 s,"
        " max_cost_usd none, daily_budget_usd none (by command queue)\n"
    )
    assert queue("show", "--endpoint=agent-b") == "No queue has limits.\n"


def test_set_as_the_owner_records_them_and_show_lists_only_theirs(personas: Personas) -> None:
    queue("set", "--endpoint=agent-a", "--queue=triage", "--claims-per-minute=5", "--as=alice")
    queue("set", "--endpoint=agent-b", "--queue=triage", "--max-in-flight=1")

    assert queue("show", "--as=alice").startswith("agent-a triage:")
    assert queue("show", "--as=alice").count("\n") == 1
    with pytest.raises(CommandError, match="does not own"):
        queue("set", "--endpoint=agent-b", "--queue=triage", "--max-in-flight=2", "--as=alice")


@pytest.mark.parametrize(
    ("option", "named"),
    [
        ("--max-in-flight=-1", "--max-in-flight: must be between"),
        ("--claims-per-minute=lots", "--claims-per-minute: must be a whole number"),
        ("--run-timeout=5", "--run-timeout: must be between"),
        # As the Board's limits page and the admin read them: int() took these.
        ("--max-in-flight=\u0663", "--max-in-flight: must be a whole number"),
        ("--max-in-flight=1_0", "--max-in-flight: must be a whole number"),
        ("--daily-budget-usd=\u0661", "--daily-budget-usd: must be a number of US dollars"),
        ("--max-cost-usd=5_0", "--max-cost-usd: must be a number of US dollars"),
        ("--max-cost-usd=", "--max-cost-usd: must be a value"),
    ],
)
def test_a_bad_limit_is_refused_in_one_line_naming_the_option(
    personas: Personas, option: str, named: str
) -> None:
    with pytest.raises(CommandError, match=named):
        queue("set", "--endpoint=agent-a", "--queue=triage", option)
    assert queue("show") == "No queue has limits.\n"


def test_set_without_a_limit_is_refused(personas: Personas) -> None:
    with pytest.raises(CommandError, match="at least one of"):
        queue("set", "--endpoint=agent-a", "--queue=triage")


def test_a_zero_cap_or_budget_reads_as_zero_dollars_not_none(personas: Personas) -> None:
    """A $0 cap or budget is set (it allows no priced spend): ``set`` says so and does not
    call it "Nothing changed"; ``show`` lists the cap and the budget as ``set`` does."""
    out = queue("set", "--endpoint=agent-a", "--queue=triage", "--max-cost-usd=0")
    assert out == (
        "Set queue 'triage' of agent-a: max_in_flight none, claims_per_minute none,"
        " run_timeout none, max_cost_usd $0.00, daily_budget_usd none.\n"
    )
    out = queue("set", "--endpoint=agent-a", "--queue=triage", "--daily-budget-usd=0.5")
    assert out.endswith("max_cost_usd $0.00, daily_budget_usd $0.50.\n")
    again = queue("set", "--endpoint=agent-a", "--queue=triage", "--daily-budget-usd=0.50")
    assert again.startswith("Nothing changed: queue 'triage' of agent-a already has")
    assert again.endswith("max_cost_usd $0.00, daily_budget_usd $0.50.\n")

    assert queue("show", "--endpoint=agent-a") == (
        "agent-a triage: max_in_flight none, claims_per_minute none, run_timeout none,"
        " max_cost_usd $0.00, daily_budget_usd $0.50 (by command queue)\n"
    )
