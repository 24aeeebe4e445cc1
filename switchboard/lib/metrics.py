"""Switchboard's own Prometheus metrics, served at /metrics beside django-prometheus's."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from prometheus_client import Counter, Histogram

TODO_TRANSITIONS = Counter(
    "switchboard_todo_transitions_total",
    "Lifecycle transitions by name and outcome (ok, miss, replayed, empty, requeued,"
    " dead_lettered).",
    ["transition", "outcome"],
)
ATTEMPTS_CLOSED = Counter(
    "switchboard_todo_attempts_closed_total",
    "Attempts closed, by outcome and disposition.",
    ["outcome", "disposition"],
)

WEBHOOK_DELIVERIES = Counter(
    "switchboard_webhook_deliveries_total",
    "Webhook deliveries by disposition (routed, dropped, rejected, duplicate).",
    ["disposition"],
)


# Each (metric, labels) child, looked up once: ``labels()`` sorts, validates and locks on every
# call, about a tenth of a heartbeat's own Python time in a profile. Label values are a closed
# set (transition and outcome names), so the cache stays small.
_children: dict[tuple[Counter, str, str], Any] = {}


def _child(counter: Counter, first: str, second: str) -> Any:
    key = (counter, first, second)
    child = _children.get(key)
    if child is None:
        child = _children.setdefault(key, counter.labels(first, second))
    return child


def transition(name: str, result: str, n: int = 1) -> None:
    _child(TODO_TRANSITIONS, name, result).inc(n)


def attempt_closed(outcome: str, disposition: str, n: int = 1) -> None:
    _child(ATTEMPTS_CLOSED, outcome, disposition).inc(n)


def webhook_delivery(disposition: str) -> None:
    WEBHOOK_DELIVERIES.labels(disposition=disposition).inc()


ACTIVITY = Counter(
    "switchboard_activity_total",
    "Activity rows written, by kind (note, human_action, retried, a2a_state, rung).",
    ["kind"],
)


def activity(kind: str, n: int = 1) -> None:
    ACTIVITY.labels(kind=kind).inc(n)


OTLP_SPANS = Counter(
    "switchboard_otlp_spans_total",
    "OTLP spans received, by result: accepted (stored), rejected_unbound (bound to no todo),"
    " dropped_cap (over a span cap), invalid (malformed ids or times).",
    ["result"],
)
OTLP_REQUEST_SECONDS = Histogram(
    "switchboard_otlp_request_seconds",
    "OTLP export requests, from the first byte read to the answer sent, by HTTP status.",
    ["status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
RATE_LIMITED = Counter(
    "switchboard_rate_limited_total",
    "Requests refused by a rate limit, by surface (otlp, mcp, hooks) and budget (address,"
    " endpoint, source).",
    ["surface", "dimension"],
)


def otlp_spans(result: str, n: int) -> None:
    if n:
        OTLP_SPANS.labels(result=result).inc(n)


def otlp_request(status: int, seconds: float) -> None:
    OTLP_REQUEST_SECONDS.labels(status=str(status)).observe(seconds)


def rate_limited(surface: str, dimension: str) -> None:
    RATE_LIMITED.labels(surface=surface, dimension=dimension).inc()


# Request latency of the agents' surfaces, at the ASGI level (switchboard/asgi.py): from the
# request's arrival to the last byte of its answer, so a body refused at its cap is timed too.
_REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
MCP_REQUEST_SECONDS = Histogram(
    "switchboard_mcp_request_seconds",
    "MCP requests, from arrival to the end of the answer, by HTTP method and status. A GET (the"
    " server's event stream, open for as long as the client keeps it) is not timed.",
    ["method", "status"],
    buckets=_REQUEST_BUCKETS,
)
HOOK_REQUEST_SECONDS = Histogram(
    "switchboard_hook_request_seconds",
    "Webhook deliveries (/hooks/{slug}), from arrival to the end of the answer, by HTTP status.",
    ["status"],
    buckets=_REQUEST_BUCKETS,
)

type _Asgi = Callable[[Any, Any, Any], Awaitable[None]]


async def timed(
    app: _Asgi,
    scope: Any,
    receive: Any,
    send: Any,
    observe: Callable[[int, float], None],
) -> None:
    """Run the ASGI ``app`` and call ``observe(status, seconds)`` once, when the last body
    message of its answer has been sent (or, for an answer never finished, when ``app``
    returns; status 0 when none was started: the client went away)."""
    start = time.perf_counter()
    status = 0
    done = False

    async def timing_send(message: MutableMapping[str, Any]) -> None:
        nonlocal status, done
        kind = message.get("type")
        if kind == "http.response.start":
            status = int(message.get("status", 0))
        await send(message)
        if kind == "http.response.body" and not message.get("more_body", False) and not done:
            done = True
            observe(status, time.perf_counter() - start)

    try:
        await app(scope, receive, timing_send)
    finally:
        if not done:
            observe(status, time.perf_counter() - start)


def mcp_request(method: str) -> Callable[[int, float], None]:
    def observe(status: int, seconds: float) -> None:
        MCP_REQUEST_SECONDS.labels(method=method, status=str(status)).observe(seconds)

    return observe


def hook_request(status: int, seconds: float) -> None:
    HOOK_REQUEST_SECONDS.labels(status=str(status)).observe(seconds)


USAGE_REFUSED = Counter(
    "switchboard_otlp_usage_refused_total",
    "Spans whose usage attributes were not counted (the span kept), by reason: not_model_call"
    " (an agent, workflow, tool or other span: its children's model calls count instead),"
    " bad_count (negative, not an integer, above 10^12, or a sub-count above its whole).",
    ["reason"],
)


def usage_refused(reason: str, n: int = 1) -> None:
    USAGE_REFUSED.labels(reason=reason).inc(n)
