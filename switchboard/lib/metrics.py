"""Switchboard's own Prometheus metrics, served at /metrics beside django-prometheus's."""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter

TODO_TRANSITIONS = Counter(
    "switchboard_todo_transitions_total",
    "Lifecycle transitions by name and result (ok, miss, empty, requeued, dead_lettered).",
    ["transition", "result"],
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
