"""Switchboard's own Prometheus metrics, served at /metrics beside django-prometheus's."""

from __future__ import annotations

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


def transition(name: str, result: str, n: int = 1) -> None:
    TODO_TRANSITIONS.labels(transition=name, result=result).inc(n)


def attempt_closed(outcome: str, disposition: str, n: int = 1) -> None:
    ATTEMPTS_CLOSED.labels(outcome=outcome, disposition=disposition).inc(n)


def webhook_delivery(disposition: str) -> None:
    WEBHOOK_DELIVERIES.labels(disposition=disposition).inc()
