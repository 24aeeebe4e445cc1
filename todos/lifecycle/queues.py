"""A queue's pause and resume, the only writer of ``queue_pauses``
(docs/decisions/0020-queue-pause-and-bulk-actions.md), and its limits, the only writer of
``queue_settings`` but for the rate tokens the claims spend (docs/decisions/0028-queue-limits.md).

A queue pause stops the agents' claims and the rings of one endpoint's queue. It is not the
A2A interrupt, which holds one todo's lease while it waits on a human (``requester.py``)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from enum import Enum
from typing import Any
from uuid import UUID

from switchboard.lib.actors import Actor
from switchboard.lib.errors import InvalidInput
from switchboard.lib.sql import fetch_all, fetch_one
from switchboard.lib.text import signed_whole_number
from todos.lifecycle.core import actor_params
from todos.lifecycle.statements import (
    LIFT_PAUSES,
    LIFT_UNSPENT_PAUSES,
    PAUSE_BUDGET,
    PAUSE_QUEUE_BY_HUMAN,
    PAUSE_QUEUE_BY_SYSTEM,
    RESUME_QUEUE_BY_HUMAN,
    RESUME_QUEUE_BY_SYSTEM,
    SET_QUEUE_LIMITS_BY_HUMAN,
    SET_QUEUE_LIMITS_BY_SYSTEM,
)
from todos.limits import (
    RUN_TIMEOUT_MAX_SECONDS,
    RUN_TIMEOUT_MIN_SECONDS,
    check_cost,
    check_queue,
)
from todos.types import QueueChange, QueueLimits


def _queue_params(
    endpoint_id: UUID, queue: str, human_id: int | None, actor_id: int | None
) -> dict[str, Any]:
    params: dict[str, Any] = {"endpoint_id": endpoint_id, "queue": check_queue(queue)}
    if human_id is None:
        # No human: the command run on the server (manage.py queue without --as).
        return params | actor_params(Actor.command("queue"))
    return params | actor_params(Actor.human(actor_id or human_id)) | {"scope_human_id": human_id}


def pause_queue(
    endpoint_id: UUID, queue: str, *, human_id: int | None, actor_id: int | None = None
) -> QueueChange:
    """Pause an endpoint's queue: no agent's claim takes its todos (claim_next skips it, a claim
    by id is refused) and no ring goes out for them until it is resumed. Leases already held
    run on. Pausing a paused queue changes nothing (``changed`` False).

    ``human_id`` is the owning human (their own endpoints only: another's reads as unknown),
    recorded as the pause's actor (``actor_id`` when staff act for them); None is the system.
    Raises ``InvalidInput`` for an endpoint unknown in that scope.
    """
    params = _queue_params(endpoint_id, queue, human_id, actor_id)
    row = fetch_one(PAUSE_QUEUE_BY_SYSTEM if human_id is None else PAUSE_QUEUE_BY_HUMAN, params)
    assert row is not None  # the statement always returns one row
    if not row["found"]:
        raise InvalidInput("endpoint", "unknown")
    return QueueChange(endpoint_id, queue, paused=True, changed=bool(row["paused"]))


def resume_queue(
    endpoint_id: UUID, queue: str, *, human_id: int | None, actor_id: int | None = None
) -> QueueChange:
    """Resume a paused queue: its todos are claimable again, and the claimers waiting on it
    are rung at commit (once for the queue). Resuming a queue not paused changes nothing.
    ``human_id`` and ``actor_id`` as ``pause_queue``'s."""
    params = _queue_params(endpoint_id, queue, human_id, actor_id)
    row = fetch_one(RESUME_QUEUE_BY_SYSTEM if human_id is None else RESUME_QUEUE_BY_HUMAN, params)
    assert row is not None  # the statement always returns one row
    if not row["found"]:
        raise InvalidInput("endpoint", "unknown")
    return QueueChange(endpoint_id, queue, paused=False, changed=bool(row["resumed"]))


def pause_for_budget(
    pairs: list[tuple[UUID, str]], *, reason: str, day_start: dt.datetime
) -> list[tuple[UUID, str]]:
    """Pause each (endpoint, queue) of ``pairs`` for a spent daily budget (``reason``:
    ``queue_budget`` or ``endpoint_budget``), by the sweeper, until the next UTC midnight. A
    queue already paused is left as it is, and one whose budget pause since ``day_start`` an
    operator resumed is not paused again (the resume holds for the day); one the sweeper
    lifted since (``lift_unspent_pauses``) is. Read from ``queue_pauses``, so it may run every
    pass, from any sweeper. Returns the pauses opened."""
    if not pairs:
        return []
    rows = fetch_all(
        PAUSE_BUDGET,
        {
            "endpoint_ids": [e for e, _ in pairs],
            "queues": [q for _, q in pairs],
            "reason": reason,
            "day_start": day_start,
            "until": day_start + dt.timedelta(days=1),
        },
    )
    return [(r["endpoint_id"], r["queue"]) for r in rows]


def lift_unspent_pauses(spent: list[tuple[UUID, str | None]]) -> list[tuple[UUID, str]]:
    """Close, by the sweeper, the open budget pauses whose budget is no longer spent (a
    ``reprice`` lowered the day's spend, the budget was raised or cleared), waking their
    queues' claimers. ``spent``: the (endpoint, queue) of every budget spent now, queue None for
    an endpoint's. A pause whose queue the other budget still covers stays, its reason that
    budget's. Returns the queues resumed."""
    rows = fetch_all(
        LIFT_UNSPENT_PAUSES,
        {"endpoint_ids": [e for e, _ in spent], "queues": [q for _, q in spent]},
    )
    return [(r["endpoint_id"], r["queue"]) for r in rows]


def lift_due_pauses() -> list[tuple[UUID, str]]:
    """Close the pauses whose ``until`` passed (budgets', at the next UTC midnight), waking
    their queues' claimers. Returns the queues resumed."""
    return [(r["endpoint_id"], r["queue"]) for r in fetch_all(LIFT_PAUSES, {})]


class Keep(Enum):
    """A limit ``set_queue_limits`` leaves as it stands (its default)."""

    KEEP = "keep"


KEEP = Keep.KEEP
# Each limit's bounds (None clears it). max_in_flight 0 or claims_per_minute 0 stop the agents'
# claims as a pause does, without one; run timeouts as the todos' own (at least 10 seconds).
QUEUE_LIMIT_BOUNDS = {
    "max_in_flight": (0, 100_000),
    "claims_per_minute": (0, 1_000_000),
    "run_timeout_seconds": (RUN_TIMEOUT_MIN_SECONDS, RUN_TIMEOUT_MAX_SECONDS),
}


def check_limit(field: str, value: object) -> int | None:
    """``value`` as a limit of ``field`` (None clears it); ``InvalidInput`` naming ``field``
    for anything else than an integer within its bounds."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(field, "must be an integer, or none to clear it")
    low, high = QUEUE_LIMIT_BOUNDS[field]
    if not low <= value <= high:
        raise InvalidInput(field, f"must be between {low} and {high}")
    return value


# The limits that are amounts of US dollars (``check_cost``), not whole numbers.
COST_LIMITS = frozenset({"default_max_cost_usd", "daily_budget_usd"})


def limit_from_text(field: str, text: str) -> int | Decimal | None:
    """A limit of ``field`` as a form sends it (the Board's queue page, the admin's queue
    settings): blank clears it; an amount (``COST_LIMITS``) is ``check_cost``'s, anything else
    must be a whole number of ASCII digits within ``check_limit``'s bounds. ``InvalidInput``
    naming ``field`` for anything else (``--1``, ``²``, ``1e999``, a negative amount)."""
    value = text.strip()
    if not value:
        return None
    if field in COST_LIMITS:
        return check_cost(field, value)
    number = signed_whole_number(value, 11)
    if number is None:
        raise InvalidInput(field, "must be a whole number, or blank for no limit")
    return check_limit(field, number)


def set_queue_limits(
    endpoint_id: UUID,
    queue: str,
    *,
    human_id: int | None,
    actor_id: int | None = None,
    max_in_flight: int | Keep | None = KEEP,
    claims_per_minute: int | Keep | None = KEEP,
    run_timeout_seconds: int | Keep | None = KEEP,
    default_max_cost_usd: Decimal | str | Keep | None = KEEP,
    daily_budget_usd: Decimal | str | Keep | None = KEEP,
) -> QueueLimits:
    """Set an endpoint's queue's limits: each given one (None clears it), the others kept.

    ``max_in_flight``: no agent's claim takes a todo of the queue while that many are held
    (a live lease, or paused for a human); ``claims_per_minute``: the agents' claims of it, a
    token bucket refilled continuously (a changed rate starts full); ``run_timeout_seconds``:
    the default run timeout of its todos that set none; ``default_max_cost_usd``: the cost cap
    of its todos created without one; ``daily_budget_usd``: what its model calls may cost in a
    UTC day before the sweeper pauses it until the next (todos/budgets.py). The owning human's
    claims from the Board honour none of them. Waiting claimers are rung at commit.

    ``human_id`` and ``actor_id`` as ``pause_queue``'s. Raises ``InvalidInput`` naming the
    field for a value out of bounds, and for an endpoint unknown in that scope.
    """
    given = {
        "max_in_flight": max_in_flight,
        "claims_per_minute": claims_per_minute,
        "run_timeout_seconds": run_timeout_seconds,
    }
    params = _queue_params(endpoint_id, queue, human_id, actor_id)
    for field, value in given.items():
        keep = value is KEEP
        params[f"set_{field}"] = not keep
        params[field] = None if keep else check_limit(field, value)
    for field, amount in (
        ("default_max_cost_usd", default_max_cost_usd),
        ("daily_budget_usd", daily_budget_usd),
    ):
        keep = amount is KEEP
        params[f"set_{field}"] = not keep
        params[field] = None if isinstance(amount, Keep) else check_cost(field, amount)
    sql = SET_QUEUE_LIMITS_BY_SYSTEM if human_id is None else SET_QUEUE_LIMITS_BY_HUMAN
    row = fetch_one(sql, params)
    assert row is not None  # the statement always returns one row
    if not row["found"]:
        raise InvalidInput("endpoint", "unknown")
    return QueueLimits(
        endpoint_id,
        queue,
        max_in_flight=row["max_in_flight"],
        claims_per_minute=row["claims_per_minute"],
        run_timeout_seconds=row["run_timeout_seconds"],
        default_max_cost_usd=row["default_max_cost_usd"],
        daily_budget_usd=row["daily_budget_usd"],
        changed=bool(row["changed"]),
    )
