"""The A2A request handler: each JSON-RPC method → one lifecycle call or one scoped read.

The SDK's JSON-RPC routes (``a2a.server.routes``) parse the request in either protocol version
(1.0, and 0.3 through its compatibility adapter), call these methods with proto messages and
render what they return or raise. The todos table is the task store: nothing is kept in memory
but the waiters of ``switchboard.lib.todowatch``.

Who is calling: ``a2a_server.transport`` resolved the bearer to the endpoint before the SDK saw
the request and put it in the ASGI scope; ``ContextBuilder`` carries it into the call context.
Every read and write is in that endpoint's scope, so another endpoint's task id reads as an
unknown one: ``TaskNotFound``.

Database work runs in worker threads (``switchboard.lib.dbthread``), as
in ``mcp_server.server``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from django.conf import settings
from django.utils import timezone
from google.protobuf import json_format
from starlette.requests import Request

from a2a_server import tasks
from switchboard.lib import dbthread
from switchboard.lib import todowatch as watch
from switchboard.lib.errors import InvalidInput, LeaseConflict, TodoNotFound
from switchboard.models import Endpoint
from switchboard.scope import Scope
from todos import lifecycle, queries
from todos.limits import parse_instant

# The key this app adds to the ASGI scope (namespaced, as the ASGI spec asks of extensions).
SCOPE_ENDPOINT = "switchboard.a2a_endpoint"
LIST_PAGE_DEFAULT = 50
LIST_PAGE_MAX = 100


def _in_thread(func: Callable[..., Any]) -> Callable[..., Any]:
    return dbthread.wrap(func)


# Streams open per endpoint in this process (SWITCHBOARD_A2A_STREAMS_PER_ENDPOINT): each holds a
# waiter and a socket, so a requester key cannot open them without bound.
_streams: Counter[UUID] = Counter()


@contextmanager
def _stream_slot(endpoint: Endpoint) -> Iterator[None]:
    most = settings.SWITCHBOARD_A2A_STREAMS_PER_ENDPOINT
    if _streams[endpoint.id] >= most:
        raise UnsupportedOperationError(
            f"this endpoint already holds {most} open streams here; close one first"
        )
    _streams[endpoint.id] += 1
    try:
        yield
    finally:
        _streams[endpoint.id] -= 1
        if _streams[endpoint.id] <= 0:
            del _streams[endpoint.id]


class ContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, plus the endpoint the transport authenticated."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[SCOPE_ENDPOINT] = request.scope[SCOPE_ENDPOINT]
        return context


def _endpoint(context: ServerCallContext) -> Endpoint:
    endpoint = context.state.get(SCOPE_ENDPOINT)
    if not isinstance(endpoint, Endpoint):  # only if the routes were mounted without transport
        raise UnsupportedOperationError("request was not authenticated")
    return endpoint


# --- reads (sync, in a worker thread) -----------------------------------------------------------


def read_task(endpoint: Endpoint, todo_id: str) -> Task:
    """The task of one todo in the endpoint's scope (two reads); ``TaskNotFound`` otherwise."""
    try:
        detail = queries.todo_detail(Scope.of_endpoint(endpoint.id), todo_id, attempts_limit=1)
    except (TodoNotFound, InvalidInput):
        raise TaskNotFoundError(f"task {todo_id} not found") from None
    attempts = detail.history.attempts
    return tasks.task(detail.todo, attempts[0] if attempts else None)


def _create(endpoint: Endpoint, message: Message, metadata: dict[str, Any]) -> Task:
    try:
        wanted = tasks.intake(message, metadata)
        todo = lifecycle.create(
            endpoint.id,
            queue=wanted.queue or settings.SWITCHBOARD_A2A_DEFAULT_QUEUE,
            title=wanted.title,
            work_order=wanted.work_order,
            payload=wanted.payload,
            **_time(wanted.time),
        )
    except InvalidInput as exc:
        raise InvalidParamsError(str(exc)) from None
    # A dedupe hit answers the task that already holds the key.
    return read_task(endpoint, todo.id)


def _time(given: dict[str, Any]) -> dict[str, Any]:
    """lifecycle.create's time arguments from message metadata: instants parsed, numbers made
    whole (a protobuf Struct carries every number as a double); bad input raises
    ``InvalidInput`` naming the key."""
    now = timezone.now()
    out: dict[str, Any] = {
        name: parse_instant(name, given.get(name), now)
        for name in ("not_before", "start_by", "finish_by")
    }
    for name in ("priority", "run_timeout_seconds"):
        value = given.get(name)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if value is not None:
            out[name] = value
    if "dedupe_key" in given:
        out["dedupe_key"] = given["dedupe_key"]
    if "max_cost_usd" in given:
        # A Struct number is a double: its shortest decimal text (0.5, not 0.5000000000000…).
        value = given["max_cost_usd"]
        out["max_cost_usd"] = repr(value) if isinstance(value, float) else value
    return out


def _answer(endpoint: Endpoint, message: Message) -> Task:
    """A message on an existing task: the requester's answer to its question (→ resume)."""
    todo_id = message.task_id
    current = read_task(endpoint, todo_id)  # TaskNotFound for unknown and foreign ids alike
    if current.status.state not in (
        tasks.TaskState.TASK_STATE_INPUT_REQUIRED,
        tasks.TaskState.TASK_STATE_AUTH_REQUIRED,
    ):
        raise _not_waiting(endpoint, todo_id)
    try:
        lifecycle.answer(endpoint.id, todo_id, response=tasks.answer(message, endpoint.id))
    except TodoNotFound:
        raise TaskNotFoundError(f"task {todo_id} not found") from None
    except LeaseConflict:  # answered or canceled meanwhile
        raise _not_waiting(endpoint, todo_id) from None
    except InvalidInput as exc:
        raise InvalidParamsError(str(exc)) from None
    return read_task(endpoint, todo_id)


def _not_waiting(endpoint: Endpoint, todo_id: str) -> UnsupportedOperationError:
    state = read_task(endpoint, todo_id).status.state
    if state in (
        tasks.TaskState.TASK_STATE_COMPLETED,
        tasks.TaskState.TASK_STATE_FAILED,
        tasks.TaskState.TASK_STATE_CANCELED,
        tasks.TaskState.TASK_STATE_REJECTED,
    ):
        return UnsupportedOperationError(f"task {todo_id} is in a terminal state")
    return UnsupportedOperationError(f"task {todo_id} is not waiting for input")


def send(endpoint: Endpoint, params: SendMessageRequest) -> Task:
    """A new message creates a todo; a message naming a task answers it."""
    message = params.message
    if params.HasField("configuration"):
        _check_history_length(params.configuration)
    if not message.parts:
        raise InvalidParamsError("message.parts: at least one part is required")
    if message.task_id:
        return _answer(endpoint, message)
    metadata = json_format.MessageToDict(params.metadata) if params.HasField("metadata") else {}
    return _create(endpoint, message, metadata)


def cancel(endpoint: Endpoint, todo_id: str) -> Task:
    try:
        lifecycle.cancel(
            Scope.of_endpoint(endpoint.id), todo_id, reason="canceled by the A2A requester"
        )
    except (TodoNotFound, InvalidInput):
        raise TaskNotFoundError(f"task {todo_id} not found") from None
    except LeaseConflict:
        raise TaskNotCancelableError(f"task {todo_id} is already finished") from None
    return read_task(endpoint, todo_id)


_STATE_FILTER = {value: key for key, value in tasks.STATES.items()}


def _check_history_length(params: Any) -> None:
    """A task carries no message history here, so any length gives none; a negative one is
    still a bad request."""
    if params.HasField("history_length") and params.history_length < 0:
        raise InvalidParamsError("historyLength: must not be negative")


def list_tasks(endpoint: Endpoint, params: ListTasksRequest) -> ListTasksResponse:
    """A page of the endpoint's tasks, newest first (the keyset cursor of ``list_todos``)."""
    if params.context_id:
        raise UnsupportedOperationError("filtering tasks by contextId is not supported")
    if params.HasField("status_timestamp_after"):
        raise UnsupportedOperationError("filtering tasks by statusTimestampAfter is not supported")
    _check_history_length(params)
    if params.status and params.status not in _STATE_FILTER:
        raise InvalidParamsError(f"status: {params.status} is not a task state")
    size = params.page_size if params.HasField("page_size") else LIST_PAGE_DEFAULT
    if not 1 <= size <= LIST_PAGE_MAX:
        raise InvalidParamsError(f"pageSize: must be between 1 and {LIST_PAGE_MAX}")
    after = None
    if params.page_token:
        after = queries.Cursor.decode(params.page_token)
        if after is None:
            raise InvalidParamsError("pageToken: not a token this server returned")
    state = _STATE_FILTER[params.status] if params.status else ""
    page = queries.todo_page(
        Scope.of_endpoint(endpoint.id), queries.TodoFilters(state=state), after, size=size
    )
    return ListTasksResponse(
        tasks=[tasks.list_task(t, t.id, t.updated_at) for t in page.todos],
        next_page_token=page.next_cursor.encode() if page.next_cursor else "",
        page_size=size,
        total_size=len(page.todos),
    )


# --- the handler -------------------------------------------------------------------------------


class TodoRequestHandler(RequestHandler):
    """Every A2A method, in the calling endpoint's scope."""

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        _check_history_length(params)
        return await _in_thread(read_task)(_endpoint(context), params.id)

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        return await _in_thread(list_tasks)(_endpoint(context), params)

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        return await _in_thread(cancel)(_endpoint(context), params.id)

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        endpoint = _endpoint(context)
        current = await _in_thread(send)(endpoint, params)
        if params.configuration.return_immediately:
            return current
        # Blocking: wait for the end or a question, up to the configured bound.
        deadline = time.monotonic() + settings.SWITCHBOARD_A2A_BLOCKING_SECONDS
        with watch.following(current.id) as changed:
            while current.status.state not in tasks.FINAL:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                await watch.changed(changed, left)
                current = await _in_thread(read_task)(endpoint, current.id)
        return current

    async def _follow(self, endpoint: Endpoint, first: Task) -> AsyncGenerator[Event]:
        """The task, then an update per state change, until it ends or asks for input."""
        yield first
        current = first
        with watch.following(first.id) as changed:
            while current.status.state not in tasks.FINAL:
                await watch.changed(changed)
                latest = await _in_thread(read_task)(endpoint, first.id)
                if latest.status.state == current.status.state:
                    continue
                current = latest
                for artifact in current.artifacts:
                    yield TaskArtifactUpdateEvent(
                        task_id=current.id,
                        context_id=current.context_id,
                        artifact=artifact,
                        last_chunk=True,
                    )
                yield tasks.update_event(current)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        endpoint = _endpoint(context)
        with _stream_slot(endpoint):
            first = await _in_thread(send)(endpoint, params)
            async for event in self._follow(endpoint, first):
                yield event

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        endpoint = _endpoint(context)
        with _stream_slot(endpoint):
            first = await _in_thread(read_task)(endpoint, params.id)
            if first.status.state in tasks.FINAL - {
                tasks.TaskState.TASK_STATE_INPUT_REQUIRED,
                tasks.TaskState.TASK_STATE_AUTH_REQUIRED,
            }:
                raise UnsupportedOperationError(f"task {params.id} is in a terminal state")
            async for event in self._follow(endpoint, first):
                yield event

    # Push notifications and the extended card are not offered (the card says so).

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError
