"""MCP resources: a todo's detail and a queue's summary, owner-scoped like every tool.

``switchboard://todos/{id}`` is the todo with its attempts (get_todo's shape; the "todo
detail resource", served as JSON rather than A2UI for now). ``switchboard://queues/{queue}`` is
a queue's summary: what the doorbell will announce ``notifications/resources/updated`` for, so
a subscriber reads it to see what changed.

These functions run in a worker thread and raise ``ResourceError`` for anything not readable;
``mcp_server.server`` turns it into the protocol's resource-not-found error.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote

from mcp_server import shapes, tools, verbs
from mcp_server.schemas import ATTEMPTS_LIMIT_DEFAULT
from switchboard.lib import jsonlimits
from switchboard.lib.errors import InvalidInput, TodoNotFound
from todos import limits, queries

SCHEME = "switchboard://"
TODO_TEMPLATE = "switchboard://todos/{id}"
QUEUE_TEMPLATE = "switchboard://queues/{queue}"
MIME_TYPE = "application/json"


class ResourceError(Exception):
    """The URI names nothing this caller may read (unknown, foreign or outside its verbs)."""


def todo_uri(todo_id: str) -> str:
    return f"{SCHEME}todos/{quote(todo_id, safe='')}"


def queue_uri(queue: str) -> str:
    return f"{SCHEME}queues/{quote(queue, safe='')}"


def _parse(uri: str) -> tuple[str, str]:
    """(kind, name) of a switchboard:// URI; names are percent-decoded (RFC 6570 expansion)."""
    if not uri.startswith(SCHEME):
        raise ResourceError(uri)
    kind, sep, name = uri[len(SCHEME) :].partition("/")
    if not sep or not name or "/" in name or kind not in ("todos", "queues"):
        raise ResourceError(uri)
    # Strictly: an escape that is not UTF-8 (``%FF``) names nothing, where the default would
    # read it as U+FFFD and name another queue.
    try:
        name = unquote(name, errors="strict")
    except UnicodeDecodeError:
        raise ResourceError(uri) from None
    # A name no todo or queue can have names nothing: a queue is a lifecycle name, and an id
    # PostgreSQL cannot compare (NUL, a lone surrogate) must not reach it.
    try:
        if kind == "queues":
            limits.check_queue(name)
        elif jsonlimits.text_problem(name) is not None:
            raise ResourceError(uri)
    except InvalidInput:
        raise ResourceError(uri) from None
    return kind, name


def queue_of(uri: str) -> str | None:
    """The queue a ``switchboard://queues/{queue}`` URI names, or None for any other URI."""
    try:
        kind, name = _parse(uri)
    except ResourceError:
        return None
    return name if kind == "queues" else None


def todo_of(uri: str) -> str | None:
    """The todo id a ``switchboard://todos/{id}`` URI names, or None for any other URI."""
    try:
        kind, name = _parse(uri)
    except ResourceError:
        return None
    return name if kind == "todos" else None


def read(caller: tools.Caller, uri: str) -> dict[str, Any]:
    """The JSON body of ``uri``; raises ``ResourceError`` when the caller may not read it."""
    kind, name = _parse(uri)
    if kind == "todos":
        if not verbs.can_read_todos(caller.endpoint):
            raise ResourceError(uri)
        try:
            return tools.todo_detail(caller, name, ATTEMPTS_LIMIT_DEFAULT)
        except TodoNotFound:
            raise ResourceError(uri) from None
    if not verbs.can_read_queues(caller.endpoint):
        raise ResourceError(uri)
    return shapes.queue_out(queries.queue_summary(caller.scope, name), queue_uri(name))


def listed_queues(caller: tools.Caller) -> list[str]:
    """The queues worth listing (``todos.queries.listed_queues``), if the caller reads queues."""
    if not verbs.can_read_queues(caller.endpoint):
        return []
    return queries.listed_queues(caller.scope)
