"""MCP resources: a todo's detail and a queue's summary, owner-scoped like every tool.

``switchboard://todos/{id}`` is the todo with its attempts (get_todo's shape; the seeds' "todo
detail resource", served as JSON rather than A2UI for now). ``switchboard://queues/{queue}`` is
a queue's summary: what the doorbell will announce ``notifications/resources/updated`` for, so
a subscriber reads it to see what changed.

These functions run in a worker thread and raise ``ResourceError`` for anything not readable;
``mcp_server.server`` turns it into the protocol's resource-not-found error.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote

from django.db.models import Count, F, Min, Q
from django.db.models.functions import Now

from mcp_server import shapes, tools, verbs
from mcp_server.schemas import ATTEMPTS_LIMIT_DEFAULT
from switchboard.lib.errors import TodoNotFound
from todos.models import Rule, State, Todo

SCHEME = "switchboard://"
TODO_TEMPLATE = "switchboard://todos/{id}"
QUEUE_TEMPLATE = "switchboard://queues/{queue}"
MIME_TYPE = "application/json"
LISTED_QUEUES_MAX = 100


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
    return kind, unquote(name)


def queue_of(uri: str) -> str | None:
    """The queue a ``switchboard://queues/{queue}`` URI names, or None for any other URI."""
    try:
        kind, name = _parse(uri)
    except ResourceError:
        return None
    return name if kind == "queues" else None


def queue_summary(caller: tools.Caller, queue: str) -> dict[str, Any]:
    """Counts by state and what is claimable now, in one aggregate over the queue's todos."""
    # Uses index: todos_board_state_idx (endpoint_id, state, …); queue filters the rows read.
    todos = Todo.objects.filter(caller.scope.todos(), queue=queue)
    has_budget = Q(attempt__lt=F("max_attempts"))
    claimable = (
        Q(state=State.PENDING)
        | (Q(state=State.CLAIMED, lease_expires_at__lt=Now()) & has_budget)
        | (Q(state=State.FAILED, next_retry_at__lte=Now()) & has_budget)
    )
    counts = todos.aggregate(
        claimable=Count("id", filter=claimable),
        oldest_pending_at=Min("created_at", filter=Q(state=State.PENDING)),
        **{state.value.replace("-", "_"): Count("id", filter=Q(state=state)) for state in State},
    )
    return {
        "uri": queue_uri(queue),
        "queue": queue,
        "claimable": counts.pop("claimable"),
        "oldest_pending_at": shapes.iso(counts.pop("oldest_pending_at")),
        "counts": {state.value: counts[state.value.replace("-", "_")] for state in State},
    }


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
    return queue_summary(caller, name)


def listed_queues(caller: tools.Caller) -> list[str]:
    """The queues worth listing: those rules route to this endpoint and those with live todos.

    A queue exists only as a name on todos and rules, so there is no table to list; this is
    bounded, and any other queue name is still readable through the template.
    """
    if not verbs.can_read_queues(caller.endpoint):
        return []
    routed = Rule.objects.filter(endpoint_id=caller.endpoint.id).values_list("queue", flat=True)
    live = (
        Todo.objects.filter(
            caller.scope.todos(), state__in=(State.PENDING, State.CLAIMED, State.FAILED)
        )
        .order_by()  # the model's default ordering would join the DISTINCT and defeat it
        .values_list("queue", flat=True)
        .distinct()[:LISTED_QUEUES_MAX]
    )
    return sorted({*routed, *live})[:LISTED_QUEUES_MAX]
