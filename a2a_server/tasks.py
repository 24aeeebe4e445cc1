"""Todos as A2A tasks: the conversions both ways, pure (no database).

A todo's states are A2A's task states (todos/states.py), so a task is a todo read through the
endpoint's scope, its state by the table MCP Tasks reads too (todos/task_states.py: a failed
todo with a retry scheduled is working, a dead-lettered one failed).

A completed task carries one artifact, ``result``: the todo's result as a data part, the
attempt's artifact URI as a url part and its summary as a text part (those present). A failed
or rejected task's status message is the attempt's summary; an input-required task's is the
holder's question. The requester's message becomes the todo: its text parts the work order
(and the first line the title), all its parts, context id and metadata the payload.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

from a2a.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from google.protobuf import json_format, struct_pb2, timestamp_pb2

from attempts.types import AttemptView, Usage
from switchboard.lib.actors import Actor
from switchboard.lib.errors import InvalidInput
from todos import task_states
from todos.states import State, TodoRow

TITLE_MAX_CHARS = 200

# The filter of ListTasks: a todo state per A2A state (failed: the dead letter's row).
STATES: Mapping[str, int] = {
    state: TaskState.Value(
        task_states.TABLE[task_states.DEAD if state == State.FAILED else state].a2a
    )
    for state in State
}
# Where a stream closes and a blocking SendMessage returns (A2A: terminal or interrupted).
FINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_AUTH_REQUIRED,
    }
)


class A2aTodo(TodoRow, Protocol):
    """What a task is built from: a ``Todo`` or a ``TodoView`` with its large columns."""

    @property
    def id(self) -> str: ...
    @property
    def payload(self) -> Any: ...
    @property
    def result(self) -> Any: ...
    @property
    def input_request(self) -> Any: ...
    @property
    def updated_at(self) -> Any: ...
    @property
    def attempts_total(self) -> int: ...


def task_state(todo: TodoRow) -> int:
    """The A2A state of ``todo``: todos/task_states.py's table, shared with MCP Tasks."""
    return TaskState.Value(task_states.of(todo).a2a)


def context_id(todo: A2aTodo) -> str:
    payload = todo.payload
    value = payload.get("context_id") if isinstance(payload, dict) else None
    return value if isinstance(value, str) else ""


def _value(value: Any) -> struct_pb2.Value:
    return json_format.ParseDict(value, struct_pb2.Value())


def _timestamp(todo: A2aTodo) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(todo.updated_at)
    return stamp


def _agent_text(todo: A2aTodo, kind: str, text: str) -> Message:
    return Message(
        message_id=f"{todo.id}-{kind}-{todo.attempts_total}",
        task_id=todo.id,
        context_id=context_id(todo),
        role=Role.ROLE_AGENT,
        parts=[Part(text=text)],
    )


def question(todo: A2aTodo) -> str | None:
    request = todo.input_request
    if isinstance(request, dict) and isinstance(request.get("question"), str):
        return str(request["question"])
    return None


def status(todo: A2aTodo, attempt: AttemptView | None) -> TaskStatus:
    state = task_state(todo)
    out = TaskStatus(state=state, timestamp=_timestamp(todo))  # type: ignore[arg-type]
    text: str | None = None
    if state in (TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED):
        text = question(todo)
    elif state in (
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_REJECTED,
        TaskState.TASK_STATE_CANCELED,
    ):
        text = attempt.summary if attempt is not None else None
    if text:
        out.message.CopyFrom(_agent_text(todo, todo.state, text))
    return out


def artifacts(todo: A2aTodo, attempt: AttemptView | None) -> list[Artifact]:
    if todo.state != State.COMPLETED:
        return []
    parts: list[Part] = []
    if todo.result is not None:
        parts.append(Part(data=_value(todo.result), media_type="application/json"))
    if attempt is not None and attempt.artifact:
        parts.append(Part(url=attempt.artifact))
    if attempt is not None and attempt.summary:
        parts.append(Part(text=attempt.summary))
    if not parts:
        return []
    return [Artifact(artifact_id=f"{todo.id}-result", name="result", parts=parts)]


def task_metadata(todo: A2aTodo) -> dict[str, Any]:
    """The task's metadata: ``switchboard.usage``, what its agents' model calls used and cost
    (``attempts.types.Usage.as_json``, kept on the todo by the OTLP ingest), and
    ``switchboard.max_cost_usd``, its cost cap (null: none)."""
    cap = getattr(todo, "max_cost_usd", None)
    kept = getattr(todo, "usage", None)  # a TodoView's; a Todo's are its columns
    usage = kept if isinstance(kept, Usage) else Usage.from_row(todo)
    return {
        "switchboard.usage": usage.as_json(),
        "switchboard.max_cost_usd": None if cap is None else float(cap),
    }


def task(todo: A2aTodo, attempt: AttemptView | None) -> Task:
    """The task of ``todo``; ``attempt`` is its latest attempt (None before any claim)."""
    out = Task(
        id=todo.id,
        context_id=context_id(todo),
        status=status(todo, attempt),
        artifacts=artifacts(todo, attempt),
    )
    out.metadata.update(task_metadata(todo))
    return out


def list_task(todo: TodoRow, todo_id: str, updated_at: Any) -> Task:
    """A ListTasks row: the list read defers the large columns, so only the state and time."""
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(updated_at)
    return Task(id=todo_id, status=TaskStatus(state=task_state(todo), timestamp=stamp))  # type: ignore[arg-type]


def update_event(current: Task) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id=current.id, context_id=current.context_id, status=current.status
    )


# --- the requester's message → the todo ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Intake:
    """What ``SendMessage`` creates: the todo's fields from the message."""

    queue: str | None
    title: str
    work_order: str
    payload: dict[str, Any]
    # The todo's time as the metadata gave it (TIME_KEYS), unchecked: lifecycle.create checks.
    time: dict[str, Any]


# Metadata keys that set a new todo's time (docs/guides/agents.md): instants are ISO 8601 with
# a time zone or +90s/+10m/+2h/+1d from now; priority and run_timeout_seconds whole numbers.
TIME_KEYS = (
    "priority",
    "not_before",
    "start_by",
    "finish_by",
    "run_timeout_seconds",
    "dedupe_key",
    "max_cost_usd",
)


def _metadata(message: Any) -> dict[str, Any]:
    if not message.HasField("metadata"):
        return {}
    return json_format.MessageToDict(message.metadata)


def intake(message: Message, request_metadata: Mapping[str, Any]) -> Intake:
    """The todo a new message asks for. The queue comes from the message's metadata, else the
    request's (``{"queue": "…"}``); None means the endpoint's default. So does its time and
    cost cap (``TIME_KEYS``: ``{"priority": 5, "finish_by": "+2h", "max_cost_usd": 0.5}``).
    ``InvalidInput`` for a queue that is not a string."""
    metadata = _metadata(message)
    queue = metadata.get("queue", request_metadata.get("queue"))
    if queue is not None and (not isinstance(queue, str) or not queue):
        raise InvalidInput("metadata.queue", "must be a queue's name (a non-empty string)")
    texts = [part.text for part in message.parts if part.WhichOneof("content") == "text"]
    work_order = "\n\n".join(texts)
    first = work_order.strip().splitlines()[0] if work_order.strip() else ""
    payload: dict[str, Any] = {
        "context_id": message.context_id or None,
        "message_id": message.message_id,
        "parts": [json_format.MessageToDict(part) for part in message.parts],
    }
    if metadata:
        payload["metadata"] = metadata
    time = {
        key: value
        for key in TIME_KEYS
        if (value := metadata.get(key, request_metadata.get(key))) is not None
    }
    return Intake(
        queue=queue,
        title=first[:TITLE_MAX_CHARS],
        work_order=work_order,
        payload=payload,
        time=time,
    )


def answer(message: Message, endpoint_id: UUID) -> dict[str, Any]:
    """The requester's answer to an input-required task, as the holder reads it; ``from`` is
    the endpoint's requester as every actor is spelled (switchboard/lib/actors.py)."""
    texts = [part.text for part in message.parts if part.WhichOneof("content") == "text"]
    return {
        "text": "\n\n".join(texts),
        "parts": [json_format.MessageToDict(part) for part in message.parts],
        "message_id": message.message_id,
        "from": str(Actor.requester(endpoint_id)),
    }
