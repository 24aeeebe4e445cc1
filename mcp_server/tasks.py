"""MCP Tasks, both shapes, on Switchboard's own transport: a submitted todo is the task.

The official SDK 2.x ships the Tasks types but no runtime, and its method tables leave
``tasks/*`` out of both eras, so ``mcp_server.transport`` hands these requests here before the
SDK sees them (docs/decisions/0032-one-task-state-table.md):

- **2026-07-28** (extension ``io.modelcontextprotocol/tasks``): a ``submit_todo`` from a client
  that lists the extension in its per-request capabilities is answered ``resultType: "task"``;
  ``tasks/get`` polls (the result inlined once finished, the question as ``inputRequests``
  while it waits), ``tasks/update`` answers the question (the lifecycle's ``answer``, as A2A's),
  ``tasks/cancel`` cancels (an empty acknowledgement, a finished task's too);
  ``notifications/tasks`` ride ``subscriptions/listen`` (``mcp_server.server``).
- **2025-11-25**: ``params.task`` on ``tools/call`` gets ``CreateTaskResult``; ``tasks/get``,
  ``tasks/result`` (waits until finished, then the tool's result), ``tasks/list`` (the calling
  key's own, cursor-paged: ``mcp_server.registry``), ``tasks/cancel`` (the cancelled task; a
  finished one is invalid params); ``notifications/tasks/status`` ride the session's GET
  stream (``mcp_server.transport``).

A task's id is its todo's id, its status the shared table's (todos/task_states.py, which A2A
reads too), its ``statusMessage`` the holder's question, else the latest progress note, else
the last attempt's summary. A task is any todo in the calling endpoint's scope; another
endpoint's id reads exactly like an unknown one (-32602, "Task not found"). Everything here runs
its database work in one worker-thread hop per request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from django.db import DatabaseError

from activity.models import TodoActivity
from attempts.types import AttemptView
from mcp_server import registry, shapes
from mcp_server.schemas import QUESTION_MAX_CHARS
from switchboard.lib import jsonlimits
from switchboard.lib.actors import Actor
from switchboard.lib.errors import InvalidInput, LeaseConflict, TodoNotFound
from switchboard.models import Endpoint
from switchboard.scope import Scope
from todos import lifecycle, queries, task_states
from todos.models import Todo
from todos.states import AWAITING_INPUT_STATES

EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK_META = "io.modelcontextprotocol/related-task"
# The poll interval suggested to clients; faster polls meet the endpoint's request rate (429).
POLL_INTERVAL_MS = 2000
NOT_FOUND = "Failed to retrieve task: Task not found"
MODERN_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
LEGACY_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
ID_MAX_CHARS = 64
# The question's answer field in the elicitation a waiting task asks for.
ANSWER_FIELD = "answer"
# An elicitation result's actions (MCP, "Elicitation"), and the answer's length: answer_todo's.
ANSWER_ACTIONS = ("accept", "decline", "cancel")
ANSWER_MAX_CHARS = QUESTION_MAX_CHARS
ANSWER_CONTENT_MAX_BYTES = 4 * QUESTION_MAX_CHARS


class TaskError(Exception):
    """A JSON-RPC error for a task request: the spec's code, a message, optional data."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


def not_found() -> TaskError:
    return TaskError(types.INVALID_PARAMS, NOT_FOUND)


def extension_declared(capabilities: Any) -> bool:
    """Whether a 2026-07-28 request's client capabilities list the Tasks extension."""
    if not isinstance(capabilities, Mapping):
        return False
    extensions = capabilities.get("extensions")
    return isinstance(extensions, Mapping) and EXTENSION in extensions


def missing_capability() -> TaskError:
    return TaskError(
        types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
        {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
    )


# --- reading a task (in a worker thread) ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaskView:
    """A todo as a task: the todo, its latest attempt, its latest note, its MCP submission."""

    todo: Todo
    attempt: AttemptView | None
    note: str | None
    submitted: registry.Submitted | None

    @property
    def row(self) -> task_states.TaskState:
        return task_states.of(self.todo)


def task_id_of(params: Mapping[str, Any]) -> str:
    """``params.taskId``, or the not-found error for anything no todo id can be."""
    value = params.get("taskId")
    if not isinstance(value, str) or not value or len(value) > ID_MAX_CHARS:
        raise not_found()
    if jsonlimits.text_problem(value) is not None:
        raise not_found()
    return value


def read(endpoint: Endpoint, todo_id: str) -> TaskView:
    """The task ``todo_id`` in the endpoint's scope (three reads); not-found otherwise."""
    try:
        detail = queries.todo_detail(Scope.of_endpoint(endpoint.id), todo_id, attempts_limit=1)
    except (TodoNotFound, InvalidInput):
        raise not_found() from None
    attempts = detail.history.attempts
    note = (
        TodoActivity.objects.filter(todo_id=todo_id, kind="note")
        .order_by("-seq")
        .values_list("message", flat=True)
        .first()
    )
    return TaskView(
        todo=detail.todo,
        attempt=attempts[0] if attempts else None,
        note=note,
        submitted=registry.submitted(todo_id, endpoint.id),
    )


def question(todo: Todo) -> str | None:
    request = todo.input_request
    if isinstance(request, dict) and isinstance(request.get("question"), str):
        return str(request["question"])
    return None


def question_key(todo: Todo) -> str:
    """The key of the waiting question: request_input's own (never reused over the task's
    life), else one made of the attempt, for questions asked before keys existed."""
    request = todo.input_request
    if isinstance(request, dict) and isinstance(request.get("key"), str):
        return f"question-{request['key']}"
    return f"question-attempt-{todo.attempts_total}"


def status_message(view: TaskView) -> str | None:
    todo, row = view.todo, view.row
    if row.mcp == task_states.INPUT_REQUIRED:
        return question(todo)
    if row.mcp == task_states.WORKING:
        return view.note or None
    return view.attempt.summary if view.attempt is not None else None


def _base(view: TaskView, *, modern: bool) -> dict[str, Any]:
    todo = view.todo
    ttl = view.submitted.ttl_ms if view.submitted is not None else None
    out: dict[str, Any] = {
        "taskId": todo.id,
        "status": view.row.mcp_modern if modern else view.row.mcp,
    }
    if (message := status_message(view)) is not None:
        out["statusMessage"] = message
    out["createdAt"] = shapes.iso(todo.created_at)
    out["lastUpdatedAt"] = shapes.iso(todo.updated_at)
    if modern:
        out["ttlMs"] = ttl
        out["pollIntervalMs"] = POLL_INTERVAL_MS
    else:
        out["ttl"] = ttl
        out["pollInterval"] = POLL_INTERVAL_MS
    return out


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tool_result(view: TaskView) -> dict[str, Any]:
    """The ``CallToolResult`` of a finished task: ``submit_todo``'s structured shape with the
    todo in its final state (its result too), the last attempt's summary and artifact. A
    failed, rejected or canceled todo is a tool error (``isError``): its first text block is
    the error as every tool error reads (``{"error": {code, message}}``), then the same
    structured content as text, so a client that renders nothing still reads how it ended and
    the App still gets the todo."""
    todo, attempt = view.todo, view.attempt
    summary = attempt.summary if attempt is not None else None
    out = {
        "todo": shapes.todo_out(todo, detail=False, result=True),
        "deduplicated": False,
        "summary": summary,
        "artifact": attempt.artifact if attempt is not None else None,
    }
    if todo.state == "completed":
        return {
            "content": [{"type": "text", "text": _compact(out)}],
            "structuredContent": out,
            "isError": False,
        }
    error = {"code": str(todo.state), "message": summary or f"the todo {todo.state}"}
    return {
        "content": [
            {"type": "text", "text": _compact({"error": error})},
            {"type": "text", "text": _compact(out)},
        ],
        "structuredContent": out,
        "isError": True,
    }


def modern_task(view: TaskView) -> dict[str, Any]:
    """The 2026-07-28 ``DetailedTask``: the result inlined once finished, the question as an
    elicitation in ``inputRequests`` while it waits."""
    out = _base(view, modern=True)
    row = view.row
    if row.mcp_modern == task_states.INPUT_REQUIRED:
        out["inputRequests"] = {
            question_key(view.todo): {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": question(view.todo) or "The agent asks for input.",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {ANSWER_FIELD: {"type": "string", "title": "Answer"}},
                        "required": [ANSWER_FIELD],
                    },
                },
            }
        }
    elif row.mcp_modern == task_states.COMPLETED:
        out["result"] = tool_result(view)
    return out


def legacy_task(view: TaskView) -> dict[str, Any]:
    """The 2025-11-25 ``Task``."""
    return _base(view, modern=False)


# --- the methods (sync, one worker-thread hop each) ----------------------------------------------


def get(endpoint: Endpoint, params: Mapping[str, Any], modern: bool) -> dict[str, Any]:
    view = read(endpoint, task_id_of(params))
    return modern_task(view) if modern else legacy_task(view)


def _response(todo: Todo, responses: Any) -> dict[str, Any] | None:
    """The holder's ``input_request.response`` from ``inputResponses``, or None when they do
    not answer the outstanding question (the spec: ignore what is not outstanding).

    The answer is an elicitation's result: ``accept`` with an object ``content`` (its ``answer``,
    the field asked for, a string at most as long as ``answer_todo`` takes; a client may send
    other fields, kept as sent within ``ANSWER_CONTENT_MAX_BYTES``), or ``decline`` or
    ``cancel`` without content; anything else is invalid params, and the holder is not
    resumed with it."""
    if not isinstance(responses, Mapping):
        raise TaskError(types.INVALID_PARAMS, "inputResponses: must be an object")
    key = question_key(todo)
    if key not in responses:
        return None
    answer = responses[key]
    if not isinstance(answer, Mapping):
        raise TaskError(types.INVALID_PARAMS, f"inputResponses.{key}: must be an object")
    action = answer.get("action", "accept")
    if action not in ANSWER_ACTIONS:
        raise TaskError(
            types.INVALID_PARAMS,
            f"inputResponses.{key}.action: must be one of {', '.join(ANSWER_ACTIONS)}",
        )
    content = answer.get("content")
    text = content.get(ANSWER_FIELD) if isinstance(content, Mapping) else None
    if action == "accept" and (
        not isinstance(content, Mapping)
        or (text is not None and (not isinstance(text, str) or len(text) > ANSWER_MAX_CHARS))
        or len(json.dumps(content)) > ANSWER_CONTENT_MAX_BYTES
    ):
        raise TaskError(
            types.INVALID_PARAMS,
            f"inputResponses.{key}.content: accept carries an object (at most"
            f" {ANSWER_CONTENT_MAX_BYTES} bytes of JSON) whose {ANSWER_FIELD!r}, if given, is a"
            f" string of at most {ANSWER_MAX_CHARS} characters",
        )
    if action != "accept" and content is not None:
        raise TaskError(
            types.INVALID_PARAMS, f"inputResponses.{key}.content: {action} carries no content"
        )
    out = {"action": action, "text": text, "content": content}
    if (problem := jsonlimits.problem(out)) is not None:
        raise TaskError(types.INVALID_PARAMS, f"inputResponses: {problem}")
    return out


def update(endpoint: Endpoint, params: Mapping[str, Any]) -> dict[str, Any]:
    """``tasks/update``: answer the waiting question (``lifecycle.answer``: the holder's claim
    resumes and it reads the answer under ``input_request.response``)."""
    todo_id = task_id_of(params)
    view = read(endpoint, todo_id)
    if view.todo.state not in AWAITING_INPUT_STATES:
        raise TaskError(types.INVALID_PARAMS, f"task {todo_id} is not waiting for input")
    response = _response(view.todo, params.get("inputResponses"))
    if response is None:
        return {}
    response["from"] = str(Actor.requester(endpoint.id))
    try:
        lifecycle.answer(endpoint.id, todo_id, response=response)
    except TodoNotFound:
        raise not_found() from None
    except LeaseConflict:  # answered or canceled meanwhile
        raise TaskError(types.INVALID_PARAMS, f"task {todo_id} is not waiting for input") from None
    except InvalidInput as exc:
        raise TaskError(types.INVALID_PARAMS, str(exc)) from None
    return {}


def cancel(endpoint: Endpoint, params: Mapping[str, Any], modern: bool) -> dict[str, Any]:
    """``tasks/cancel``: the Board's cancel in the endpoint's scope; the holder hears it at its
    next call. A finished task differs by era (docs/decisions/0032-one-task-state-table.md):
    the 2025-11-25 revision rejects it with invalid params; the 2026-07-28 extension's cancel
    is cooperative, reserves -32602 for an unknown id and only obliges the server to
    acknowledge, so a finished task gets the same empty acknowledgement and keeps its status."""
    todo_id = task_id_of(params)
    try:
        lifecycle.cancel(
            Scope.of_endpoint(endpoint.id), todo_id, reason="canceled by the MCP requester"
        )
    except (TodoNotFound, InvalidInput):
        raise not_found() from None
    except LeaseConflict:
        if modern:
            return {}
        raise TaskError(
            types.INVALID_PARAMS, f"Cannot cancel task {todo_id}: it is already terminal"
        ) from None
    if modern:
        return {}
    return legacy_task(read(endpoint, todo_id))


def list_page(endpoint: Endpoint, key_digest: bytes, params: Mapping[str, Any]) -> dict[str, Any]:
    """``tasks/list`` (2025-11-25): the calling key's submissions, newest first."""
    after = None
    if (cursor := params.get("cursor")) is not None:
        after = registry.decode_cursor(cursor)
        if after is None:
            raise TaskError(types.INVALID_PARAMS, "cursor: not a cursor this server returned")
    page, next_cursor = registry.page(endpoint.id, key_digest, after)
    todos = {
        todo.id: todo
        for todo in Todo.objects.filter(
            Scope.of_endpoint(endpoint.id).todos(), id__in=[todo_id for todo_id, _ in page]
        )
    }
    listed = []
    for todo_id, submitted in page:
        todo = todos.get(todo_id)
        if todo is not None:
            # With its submission, as tasks/get shows it (its ttl).
            listed.append(legacy_task(TaskView(todo, None, None, submitted)))
    out: dict[str, Any] = {"tasks": listed}
    if next_cursor is not None:
        out["nextCursor"] = next_cursor
    return out


def result_if_finished(endpoint: Endpoint, todo_id: str) -> dict[str, Any] | None:
    """``tasks/result``'s answer once the task is finished, else None (the caller waits)."""
    view = read(endpoint, todo_id)
    if not view.row.terminal:
        return None
    out = tool_result(view)
    out["_meta"] = {RELATED_TASK_META: {"taskId": todo_id}}
    return out


def notification(view: TaskView, *, modern: bool) -> dict[str, Any]:
    """The push of a task's status: ``notifications/tasks`` (the whole ``DetailedTask``, as
    tasks/get would answer) or ``notifications/tasks/status`` (the ``Task``)."""
    if modern:
        return {"method": "notifications/tasks", "params": modern_task(view)}
    return {"method": "notifications/tasks/status", "params": legacy_task(view)}


def read_or_none(endpoint: Endpoint, todo_id: str) -> TaskView | None:
    """A task to push, or None when the endpoint cannot see it (or the database is away)."""
    try:
        return read(endpoint, todo_id)
    except TaskError:
        return None
    except DatabaseError:
        return None
