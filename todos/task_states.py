"""A todo's state as a task: the one table A2A and MCP Tasks both read.

A todo handed out as a task (an A2A task, an MCP task in either era) is read through this table
and nothing else, so an A2A task and an MCP task of the same todo always say the same thing
(docs/decisions/0032-one-task-state-table.md). The table's key is a todo's *phase*: its state,
with ``failed`` split in two, because a failed todo with a retry scheduled comes back by itself
(the requester still waits) while a dead-lettered one is finished.

| phase | A2A (v1.0 enum name) | MCP task status | MCP 2026-07-28 outcome |
| --- | --- | --- | --- |
| pending | TASK_STATE_SUBMITTED | working | — |
| claimed | TASK_STATE_WORKING | working | — |
| input-required | TASK_STATE_INPUT_REQUIRED | input_required | — |
| auth-required | TASK_STATE_AUTH_REQUIRED | input_required | — |
| failed, retry scheduled | TASK_STATE_WORKING | working | — |
| completed | TASK_STATE_COMPLETED | completed | result |
| failed, dead-lettered | TASK_STATE_FAILED | failed | result, isError |
| canceled | TASK_STATE_CANCELED | cancelled | — |
| rejected | TASK_STATE_REJECTED | failed | result, isError |

MCP has five statuses where A2A has eight: submitted and working are both ``working`` (the
requester waits either way), both interrupts are ``input_required`` (the question says which),
and a refusal is a failure. The 2025-11-25 revision calls a tool call that ended in a tool error
``failed``; the 2026-07-28 extension reserves ``failed`` for JSON-RPC errors and calls such a
call ``completed`` with ``isError: true`` in its result. A failed or rejected todo is the
work's failure, not a protocol error, so the modern wire says ``completed`` with ``isError``
(the ``ERROR`` outcome) where the legacy wire and A2A say failed.

Pure: no database, no protocol SDK (a2a_server turns the enum names into its SDK's values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from todos import states
from todos.states import State, TodoRow

# The phases: a todo's state, with failed split by whether a retry is scheduled.
RETRYING: Final = "failed-retrying"
DEAD: Final = "failed-dead"

# MCP task statuses (both eras spell them alike).
WORKING: Final = "working"
INPUT_REQUIRED: Final = "input_required"
COMPLETED: Final = "completed"
FAILED: Final = "failed"
CANCELLED: Final = "cancelled"
MCP_TERMINAL: Final = frozenset({COMPLETED, FAILED, CANCELLED})

# The 2026-07-28 outcome of a finished task: its result is a success or a tool error.
OK: Final = "ok"
ERROR: Final = "error"


@dataclass(frozen=True, slots=True)
class TaskState:
    """One row of the table."""

    a2a: str  # A2A v1.0's TaskState enum name
    mcp: str  # the MCP task status (2025-11-25, and A2A's meaning)
    # The 2026-07-28 wire: the status, and whether a finished task's result is a tool error.
    mcp_modern: str
    outcome: str | None

    @property
    def terminal(self) -> bool:
        return self.mcp in MCP_TERMINAL


TABLE: Final[dict[str, TaskState]] = {
    State.PENDING: TaskState("TASK_STATE_SUBMITTED", WORKING, WORKING, None),
    State.CLAIMED: TaskState("TASK_STATE_WORKING", WORKING, WORKING, None),
    State.INPUT_REQUIRED: TaskState(
        "TASK_STATE_INPUT_REQUIRED", INPUT_REQUIRED, INPUT_REQUIRED, None
    ),
    State.AUTH_REQUIRED: TaskState(
        "TASK_STATE_AUTH_REQUIRED", INPUT_REQUIRED, INPUT_REQUIRED, None
    ),
    RETRYING: TaskState("TASK_STATE_WORKING", WORKING, WORKING, None),
    State.COMPLETED: TaskState("TASK_STATE_COMPLETED", COMPLETED, COMPLETED, OK),
    DEAD: TaskState("TASK_STATE_FAILED", FAILED, COMPLETED, ERROR),
    State.CANCELED: TaskState("TASK_STATE_CANCELED", CANCELLED, CANCELLED, None),
    State.REJECTED: TaskState("TASK_STATE_REJECTED", FAILED, COMPLETED, ERROR),
}


def phase(todo: TodoRow) -> str:
    """The table's key for ``todo``."""
    if todo.state == State.FAILED:
        return DEAD if states.is_dead_letter(todo) else RETRYING
    return str(todo.state)


def of(todo: TodoRow) -> TaskState:
    """The row of ``todo``."""
    return TABLE[phase(todo)]
