"""The one table of a todo's state as a task (todos/task_states.py), row by row over every
state a todo can reach (tests/todos/test_states.py brings one todo to each by real
transitions), and its two readers: A2A's task state and MCP's task status in both eras.
"""

from __future__ import annotations

import pytest
from a2a.types import TaskState

from a2a_server import tasks as a2a_tasks
from mcp_server import tasks as mcp_tasks
from tests.base import Personas
from tests.todos.test_states import TABLE as STATE_ROWS
from tests.todos.test_states import reach_every_state
from todos import task_states
from todos.models import Todo

# By hand: every reachable row's (A2A state, MCP 2025-11-25 status, MCP 2026-07-28 status,
# whether a finished task's result is a tool error).
WORKING = ("TASK_STATE_WORKING", "working", "working", None)
SUBMITTED = ("TASK_STATE_SUBMITTED", "working", "working", None)
DEAD = ("TASK_STATE_FAILED", "failed", "completed", True)
EXPECTED: dict[str, tuple[str, str, str, bool | None]] = {
    "pending": SUBMITTED,
    "pending, released by its holder": SUBMITTED,
    "pending, its lapsed lease reaped": SUBMITTED,
    "pending, retried by a human": SUBMITTED,
    "pending, not_before ahead": SUBMITTED,
    "pending, not_before passed": SUBMITTED,
    "pending, finish_by passed (the sweeper's next)": SUBMITTED,
    "pending, start_by passed (the sweeper's next)": SUBMITTED,
    "claimed, lapsed lease, finish_by passed": WORKING,
    "claimed, lapsed lease, start_by passed (a takeover may claim it)": WORKING,
    "failed, dead letter: finish_by passed while claimed": DEAD,
    "claimed, live lease": WORKING,
    "claimed, live lease, budget spent": WORKING,
    "claimed by its owner on the Board": WORKING,
    "claimed, lapsed lease, budget left (a takeover may claim it)": WORKING,
    "claimed, lapsed lease, budget spent": WORKING,
    "claimed again by a takeover": WORKING,
    "failed, retry due, budget left": WORKING,
    "failed, retry in the future": WORKING,
    "failed, dead letter: not retryable": DEAD,
    "failed, dead letter: failed with the budget spent": DEAD,
    "failed, dead letter: reaped with the budget spent": DEAD,
    "failed, dead letter: pending when its endpoint was revoked": DEAD,
    "failed, dead letter: claimed when its endpoint was revoked": DEAD,
    "input-required": ("TASK_STATE_INPUT_REQUIRED", "input_required", "input_required", None),
    "auth-required": ("TASK_STATE_AUTH_REQUIRED", "input_required", "input_required", None),
    "completed": ("TASK_STATE_COMPLETED", "completed", "completed", False),
    "canceled": ("TASK_STATE_CANCELED", "cancelled", "cancelled", None),
    "canceled while claimed": ("TASK_STATE_CANCELED", "cancelled", "cancelled", None),
    "rejected": ("TASK_STATE_REJECTED", "failed", "completed", True),
}


def test_every_reachable_state_has_its_row_and_both_protocols_read_it(
    personas: Personas,
) -> None:
    reached = reach_every_state(personas)
    assert EXPECTED.keys() == STATE_ROWS.keys() == reached.keys()
    wrong = []
    for name, todo_id in reached.items():
        todo = Todo.objects.get(id=todo_id)
        a2a, legacy, modern, is_error = EXPECTED[name]
        row = task_states.of(todo)
        if (row.a2a, row.mcp, row.mcp_modern) != (a2a, legacy, modern):
            wrong.append(f"{name}: table {row}")
        # The readers: A2A's task state, MCP's Task in both eras, a finished task's result.
        if TaskState.Name(a2a_tasks.task_state(todo)) != a2a:  # type: ignore[arg-type]
            wrong.append(f"{name}: A2A reads {a2a_tasks.task_state(todo)}")
        view = mcp_tasks.TaskView(todo, None, None, None)
        if mcp_tasks.legacy_task(view)["status"] != legacy:
            wrong.append(f"{name}: MCP 2025-11-25 reads {mcp_tasks.legacy_task(view)}")
        detailed = mcp_tasks.modern_task(view)
        if detailed["status"] != modern:
            wrong.append(f"{name}: MCP 2026-07-28 reads {detailed}")
        result = detailed.get("result")
        if (None if result is None else result["isError"]) != is_error:
            wrong.append(f"{name}: MCP 2026-07-28 result {result}")
        if ("inputRequests" in detailed) != (legacy == "input_required"):
            wrong.append(f"{name}: inputRequests {detailed.get('inputRequests')}")
    assert wrong == []


@pytest.mark.parametrize("key", list(task_states.TABLE))
def test_every_row_speaks_each_protocols_vocabulary(key: str) -> None:
    row = task_states.TABLE[key]
    known = set(TaskState.keys())
    assert row.a2a in known and row.a2a != "TASK_STATE_UNSPECIFIED"
    statuses = {"working", "input_required", "completed", "failed", "cancelled"}
    assert row.mcp in statuses and row.mcp_modern in statuses - {"failed"}
    # Finished for one protocol is finished for the other.
    a2a_final = TaskState.Value(row.a2a) in a2a_tasks.FINAL - {
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_AUTH_REQUIRED,
    }
    assert a2a_final == row.terminal == (row.outcome is not None or row.mcp == "cancelled")
