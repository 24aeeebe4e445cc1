"""The MCP tools: one function per verb. Parse → one lifecycle call (or one scoped read) → shape.

Each function runs in a worker thread (the ORM and the lifecycle are sync), takes the calling
endpoint and arguments already checked against the tool's input schema, and returns the result
shape or raises: a ``LifecycleError`` from the lifecycle (``not_found``, ``conflict``,
``invalid``), or a ``ToolError`` for what only this layer knows (a malformed cursor or
traceparent). ``mcp_server.server`` maps both to tool errors in one place.

Owner scope: writes go through ``todos.lifecycle``, which scopes every statement to the
endpoint; reads are ``todos.queries``' with ``Scope.of_endpoint``, the Board's reads with the
other side of the scope. A foreign id is ``not_found``, like an unknown one.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from activity import trail
from mcp_server import registry, shapes
from mcp_server.schemas import (
    ATTEMPTS_LIMIT_DEFAULT,
    LIST_LIMIT_DEFAULT,
    SUBMIT_COST_FIELDS,
)
from mcp_server.verbs import owner_of
from switchboard.lib import traceparent as tp
from switchboard.lib.actors import Actor
from switchboard.models import Endpoint
from switchboard.scope import Scope
from todos import lifecycle, queries
from todos.limits import parse_instant
from todos.types import ClaimResult

Args = Mapping[str, Any]
Out = dict[str, Any]


class ToolError(Exception):
    """A failure this layer detects; ``code`` is a tool error code (docs/guides/agents.md)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the endpoint the bearer resolved to, and what the request carried."""

    endpoint: Endpoint
    # The legacy era's Mcp-Session-Id (recorded as the attempt's claimer_session); None for
    # modern requests, which have no sessions.
    session: str | None = None
    # params._meta.traceparent of the tools/call request, unparsed.
    meta_traceparent: Any = None
    # Seconds until the endpoint is under its request rate again, when this call is over it
    # (the transport counts it; the server answers it with the rate_limited tool error).
    retry_after: int | None = None
    # The bearer's SHA-256 (switchboard.auth): which key submitted a todo, for tasks/list.
    key_digest: bytes | None = None
    # The time-to-live a 2025-11-25 client asked for its task (params.task.ttl), in ms.
    task_ttl_ms: int | None = None

    @property
    def scope(self) -> Scope:
        return Scope.of_endpoint(self.endpoint.id)

    @property
    def owner(self) -> str:
        return owner_of(self.endpoint)


def _opt(args: Args, name: str, default: Any = None) -> Any:
    """An optional argument; null counts as absent."""
    value = args.get(name)
    return default if value is None else value


# --- reads -------------------------------------------------------------------------------------


def list_todos(caller: Caller, args: Args) -> Out:
    """A page of the endpoint's todos, newest first, by keyset on (created_at, id)."""
    after = None
    if (cursor := _opt(args, "cursor")) is not None:
        after = queries.Cursor.decode(cursor)
        if after is None:
            raise ToolError("invalid", "cursor: not a cursor this server returned")
    filters = queries.TodoFilters(queue=_opt(args, "queue", ""), state=_opt(args, "state", ""))
    page = queries.todo_page(
        caller.scope, filters, after, size=_opt(args, "limit", LIST_LIMIT_DEFAULT)
    )
    return {
        # Rows leave out payload and work_order (unbounded; the page does not read them).
        "todos": [shapes.todo_out(t, detail=False) for t in page.todos],
        "next_cursor": page.next_cursor.encode() if page.next_cursor else None,
    }


def todo_detail(caller: Caller, todo_id: str, attempts_limit: int) -> Out:
    """get_todo's shape: shared with the switchboard://todos/{id} resource. Three queries: the
    todo and its attempts (owner-scoped), then its notes and span counts."""
    detail = queries.todo_detail(caller.scope, todo_id, attempts_limit)
    return shapes.detail_out(detail, trail.progress(detail))


def get_todo(caller: Caller, args: Args) -> Out:
    return todo_detail(caller, args["id"], _opt(args, "attempts_limit", ATTEMPTS_LIMIT_DEFAULT))


# --- claims ------------------------------------------------------------------------------------


def _traceparent(caller: Caller, args: Args) -> tp.TraceParent:
    """The claim's traceparent (argument first, then params._meta), validated; minted if absent.

    A receiver ignores an invalid traceparent (W3C trace context); a claim refuses it instead,
    because an agent that sent one meant its spans to bind to this attempt and would otherwise
    only find out when they never show up. When the claim carries none, a fresh one is minted:
    its trace id is stored on the attempt and returned, so an agent that adopts it as the parent
    of its spans has them bind with no attribute (docs/guides/agent-activity.md).
    """
    for source, value in (
        ("traceparent", args.get("traceparent")),
        ("_meta.traceparent", caller.meta_traceparent),
    ):
        if value is None:
            continue
        parsed = tp.parse(value)
        if parsed is None:
            raise ToolError("invalid", f"{source}: not a valid W3C traceparent")
        return parsed
    return tp.mint()


def _claim_options(caller: Caller, args: Args, trace: tp.TraceParent) -> dict[str, Any]:
    return {
        "trace_id": bytes.fromhex(trace.trace_id),
        "owner": caller.owner,
        "lease_ttl_seconds": _opt(args, "lease_ttl_seconds"),
        "claimant": _opt(args, "claimant"),
        "session": caller.session,
        "require_fence": bool(_opt(args, "require_fence", False)),
    }


def claim_next(caller: Caller, args: Args) -> Out:
    queue, queues = _opt(args, "queue"), _opt(args, "queues")
    if (queue is None) == (queues is None):
        raise ToolError("invalid", "give exactly one of queue or queues")
    trace = _traceparent(caller, args)
    claimed = lifecycle.claim_next_or_why(
        caller.endpoint.id,
        [queue] if queue is not None else queues,
        **_claim_options(caller, args, trace),
    )
    if not isinstance(claimed, ClaimResult):
        # Why, queue by queue: an agent told "paused" or "rate, retry at T" knows to wait.
        return shapes.empty_out(claimed)
    return shapes.claim_out(claimed, str(trace))


def claim(caller: Caller, args: Args) -> Out:
    trace = _traceparent(caller, args)
    claimed = lifecycle.claim(caller.endpoint.id, args["id"], **_claim_options(caller, args, trace))
    return shapes.claim_out(claimed, str(trace))


# --- the holder's reports ----------------------------------------------------------------------


def heartbeat(caller: Caller, args: Args) -> Out:
    done = lifecycle.heartbeat(
        caller.endpoint.id,
        args["id"],
        owner=caller.owner,
        lease_ttl_seconds=_opt(args, "lease_ttl_seconds"),
        lease_token=_opt(args, "lease_token"),
        note=_opt(args, "note"),
    )
    return shapes.report_out(done.todo, done.attempt_seq)


def complete(caller: Caller, args: Args) -> Out:
    done = lifecycle.complete(
        caller.endpoint.id,
        args["id"],
        owner=caller.owner,
        result=args.get("result"),
        summary=_opt(args, "summary"),
        artifact=_opt(args, "artifact"),
        lease_token=_opt(args, "lease_token"),
    )
    return shapes.report_out(done.todo, done.attempt_seq)


def fail(caller: Caller, args: Args) -> Out:
    done = lifecycle.fail(
        caller.endpoint.id,
        args["id"],
        owner=caller.owner,
        result=args.get("result"),
        summary=_opt(args, "summary"),
        artifact=_opt(args, "artifact"),
        lease_token=_opt(args, "lease_token"),
        retryable=_opt(args, "retryable", True),
        retry_after_seconds=_opt(args, "retry_after_seconds"),
    )
    return shapes.report_out(done.todo, done.attempt_seq)


def release(caller: Caller, args: Args) -> Out:
    done = lifecycle.release(
        caller.endpoint.id,
        args["id"],
        owner=caller.owner,
        summary=_opt(args, "summary"),
        lease_token=_opt(args, "lease_token"),
    )
    return shapes.report_out(done.todo, done.attempt_seq)


# --- the holder's A2A tools ---------------------------------------------------------------------


def request_input(caller: Caller, args: Args) -> Out:
    """Pause the held todo (interrupt → input-required) with the holder's question.

    The question carries a ``key`` of its own: MCP Tasks names each input request by a key that
    is never reused over the task's life (mcp_server/tasks.py)."""
    done = lifecycle.interrupt(
        caller.endpoint.id,
        args["id"],
        owner=caller.owner,
        state="input-required",
        input_request={"question": args["question"], "key": secrets.token_hex(8)},
        lease_token=_opt(args, "lease_token"),
    )
    return shapes.report_out(done.todo, done.attempt_seq)


def reject(caller: Caller, args: Args) -> Out:
    done = lifecycle.reject(
        caller.endpoint.id,
        args["id"],
        owner=caller.owner,
        result=args.get("result"),
        summary=_opt(args, "summary"),
        lease_token=_opt(args, "lease_token"),
    )
    return shapes.report_out(done.todo, done.attempt_seq)


# --- the requester's tool ---------------------------------------------------------------------


def submit_todo(caller: Caller, args: Args) -> Out:
    """A new todo on one of the endpoint's queues (``lifecycle.create``), recorded as the
    calling key's submission (``mcp_server.registry``) in the same transaction, so tasks/list
    shows exactly what this key submitted. A dedupe hit answers the todo that holds the key."""
    now = timezone.now()
    extra = {name: args[name] for name in SUBMIT_COST_FIELDS if args.get(name) is not None}
    with transaction.atomic():
        todo = lifecycle.create(
            caller.endpoint.id,
            queue=args["queue"],
            title=_opt(args, "title", ""),
            work_order=_opt(args, "work_order", ""),
            payload=args.get("payload"),
            priority=_opt(args, "priority", 0),
            not_before=parse_instant("not_before", _opt(args, "not_before"), now),
            start_by=parse_instant("start_by", _opt(args, "start_by"), now),
            finish_by=parse_instant("finish_by", _opt(args, "finish_by"), now),
            run_timeout_seconds=_opt(args, "run_timeout_seconds"),
            dedupe_key=_opt(args, "dedupe_key"),
            **extra,
        )
        if caller.key_digest is not None:
            registry.record(todo.id, caller.endpoint.id, caller.key_digest, caller.task_ttl_ms)
    return {"todo": shapes.todo_out(todo, detail=False), "deduplicated": todo.deduplicated}


# --- the MCP App's tools (visibility ["app"]): the Board's actions, from the chat -------------


def answer_todo(caller: Caller, args: Args) -> Out:
    """The requester's answer to the holder's question: ``lifecycle.answer``, as over A2A."""
    done = lifecycle.answer(
        caller.endpoint.id,
        args["id"],
        response={"text": args["text"], "from": str(Actor.requester(caller.endpoint.id))},
    )
    return shapes.report_out(done.todo, done.attempt_seq)


def cancel_todo(caller: Caller, args: Args) -> Out:
    """The Board's cancel in the endpoint's scope (``lifecycle.cancel``): the holder hears it at
    its next call."""
    done = lifecycle.cancel(caller.scope, args["id"], reason="canceled by the requester")
    return shapes.report_out(done.todo, done.attempt_seq)


def retry_todo(caller: Caller, args: Args) -> Out:
    """The Board's retry in the endpoint's scope (``lifecycle.requester_retry``)."""
    done = lifecycle.requester_retry(caller.endpoint.id, args["id"])
    return shapes.report_out(done.todo, done.attempt_seq)


TOOLS: dict[str, Callable[[Caller, Args], Out]] = {
    "list_todos": list_todos,
    "get_todo": get_todo,
    "claim_next": claim_next,
    "claim": claim,
    "heartbeat": heartbeat,
    "complete": complete,
    "fail": fail,
    "release": release,
    "request_input": request_input,
    "reject": reject,
    "submit_todo": submit_todo,
    "answer_todo": answer_todo,
    "cancel_todo": cancel_todo,
    "retry_todo": retry_todo,
}
