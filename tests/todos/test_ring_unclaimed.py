"""The unclaimed-ring sweep: ``manage.py ring_unclaimed`` and the sweeper's ring step."""

from __future__ import annotations

import io
import time

import pytest
from django.core.management import call_command
from django.db import connection

from switchboard import runtime_settings
from tests.base import Personas
from tests.reach import claimed, new_todo
from todos import lifecycle, sweeps
from todos.models import Todo

pytestmark = pytest.mark.django_db


def run(command: str, *args: str) -> str:
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def age(todo_id: str, *, pending: int | None = None, rung: int | None = None) -> None:
    """Move when the todo became pending / was last rung ``pending`` / ``rung`` seconds back."""
    with connection.cursor() as cursor:
        if pending is not None:
            cursor.execute(
                "UPDATE todos SET updated_at = now() - make_interval(secs => %s) WHERE id = %s",
                [pending, todo_id],
            )
        if rung is not None:
            cursor.execute(
                "UPDATE todos SET last_ringed_at = now() - make_interval(secs => %s) WHERE id = %s",
                [rung, todo_id],
            )


def columns(todo_id: str) -> tuple[int, bool]:
    todo = Todo.objects.get(id=todo_id)
    return todo.ring_attempts, todo.last_ringed_at is not None


def test_ring_unclaimed_rings_a_stale_pending_todo_and_writes_its_columns(
    personas: Personas,
) -> None:
    stale = new_todo(personas.endpoint_a.id)
    fresh = new_todo(personas.endpoint_a.id)
    held = claimed(personas.endpoint_a.id)
    for todo_id in (stale.id, held.todo.id):
        age(todo_id, pending=601)

    assert run("ring_unclaimed") == f"ring: rang 1: {stale.id}\n"

    assert columns(stale.id) == (1, True)
    (row,) = Todo.objects.get(id=stale.id).activity.filter(kind="rung")
    assert (row.actor_kind, row.actor_ref, row.detail["reason"]) == (
        "system",
        "sweeper",
        "unclaimed",
    )
    # A todo pending for a moment, one held: not rung, columns untouched.
    assert columns(fresh.id) == (0, False)
    assert columns(held.todo.id) == (0, False)
    assert run("ring_unclaimed") == "ring: no todo is due a ring\n"


def test_unclaimed_rings_back_off_and_stop_at_the_bound(personas: Personas) -> None:
    runtime_settings.put("ring_unclaimed_max_attempts", 3)
    runtime_settings.clear_cache()
    todo = new_todo(personas.endpoint_a.id)
    age(todo.id, pending=5000)
    assert len(lifecycle.ring_due("unclaimed")) == 1  # ring 1

    # The wait after a ring doubles per ring: 600 s after the first, 1200 s after the second.
    age(todo.id, rung=599)
    assert lifecycle.ring_due("unclaimed") == []
    age(todo.id, rung=601)
    assert len(lifecycle.ring_due("unclaimed")) == 1  # ring 2
    age(todo.id, rung=1199)
    assert lifecycle.ring_due("unclaimed") == []
    age(todo.id, rung=1201)
    assert len(lifecycle.ring_due("unclaimed")) == 1  # ring 3: the bound
    age(todo.id, pending=90_000, rung=86_400)
    assert lifecycle.ring_due("unclaimed") == []
    assert columns(todo.id) == (3, True)


def test_a_todo_nobody_rang_and_no_push_url_waits_for_the_unclaimed_sweep(
    personas: Personas,
) -> None:
    todo = new_todo(personas.endpoint_a.id)
    rings = [lifecycle.ring_due(scan) for scan in lifecycle.RING_SCANS]
    assert rings == [[]] * len(lifecycle.RING_SCANS)
    assert columns(todo.id) == (0, False)
    # The every-pass scans leave a stale todo to the unclaimed one.
    age(todo.id, pending=601)
    assert lifecycle.ring_due("gate") == lifecycle.ring_due("push") == []
    assert len(lifecycle.ring_due("unclaimed")) == 1


def test_the_sweeper_loop_runs_the_ring_step_and_the_unclaimed_scan_once_a_minute(
    personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweeps, "_unclaimed_at", None)
    todo = new_todo(personas.endpoint_a.id)
    age(todo.id, pending=601)

    out = run("sweeper", "--once")

    assert f"ring: rang 1: {todo.id}" in out
    assert columns(todo.id) == (1, True)
    # Due again at once (its last ring moved back), but the unclaimed scan ran a moment ago.
    age(todo.id, pending=5000, rung=4000)
    assert sweeps.run_pass().rung == []
    monkeypatch.setattr(sweeps, "_unclaimed_at", time.monotonic() - 61)
    assert sweeps.run_pass().rung == [todo.id]
