"""Every (outcome, disposition) pair comes from exactly the transition that should close it
(docs/guides/lifecycle.md).

Each row drives one transition against a claimed todo and reads the attempt it closed. The
table as a whole must produce each of the seed's pairs, and the transitions that end no lease
must close nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from attempts.models import Disposition, Outcome
from switchboard.lib.sql import fetch_all
from switchboard.scope import Scope
from tests.base import Personas
from tests.reach import OWNER, claimed, expire_lease, make_retry_due
from tests.rows import attempt_rows
from todos import lifecycle

Drive = Callable[[Personas, str], Any]


def _takeover(p: Personas, t: str) -> None:
    expire_lease(t)
    lifecycle.claim(p.endpoint_a.id, t, owner="worker-2")


def _reap(p: Personas, t: str) -> None:
    expire_lease(t)
    assert lifecycle.reap().requeued == (t,)


def _reap_spent(p: Personas, t: str) -> None:
    fetch_all("UPDATE todos SET max_attempts = attempt WHERE id = %(id)s", {"id": t})
    expire_lease(t)
    assert lifecycle.reap().dead_lettered == (t,)


def _finish_by_passed(p: Personas, t: str) -> None:
    fetch_all(
        "UPDATE todos SET finish_by = now() - interval '1 second' WHERE id = %(id)s", {"id": t}
    )
    assert lifecycle.dead_letter_late() == (t,)


def _run_timed_out(p: Personas, t: str) -> None:
    fetch_all(
        "UPDATE todos SET run_timeout_seconds = 10, claimed_at = now() - interval '1 minute'"
        " WHERE id = %(id)s",
        {"id": t},
    )
    expire_lease(t)
    assert lifecycle.reap().retry_scheduled == (t,)


def _over_cost_cap(p: Personas, t: str) -> None:
    fetch_all("UPDATE todos SET max_cost_usd = 0.01, cost_usd = 0.02 WHERE id = %(id)s", {"id": t})
    assert lifecycle.end_over_cap() == (t,)


def _fail_last(p: Personas, t: str) -> None:
    ep = p.endpoint_a.id
    lifecycle.fail(ep, t, owner=OWNER)
    make_retry_due(t)
    lifecycle.claim(ep, t, owner=OWNER)
    lifecycle.fail(ep, t, owner=OWNER)  # max_attempts is 2: this was the last


# transition → (how to drive it on a todo claimed by OWNER with max_attempts 2, expected pair)
CLOSERS: dict[str, tuple[Drive, tuple[str, str]]] = {
    "complete": (
        lambda p, t: lifecycle.complete(p.endpoint_a.id, t, owner=OWNER),
        ("completed", "done"),
    ),
    "fail with budget left": (
        lambda p, t: lifecycle.fail(p.endpoint_a.id, t, owner=OWNER),
        ("failed", "retry_scheduled"),
    ),
    "fail not retryable": (
        lambda p, t: lifecycle.fail(p.endpoint_a.id, t, owner=OWNER, retryable=False),
        ("failed", "dead_lettered"),
    ),
    "fail on the last attempt": (_fail_last, ("failed", "dead_lettered")),
    "release": (
        lambda p, t: lifecycle.release(p.endpoint_a.id, t, owner=OWNER),
        ("released", "requeued"),
    ),
    "takeover": (_takeover, ("lease_expired", "requeued")),
    "reap with budget left": (_reap, ("reaped", "requeued")),
    "reap with budget spent": (_reap_spent, ("reaped", "dead_lettered")),
    "finish_by passed": (_finish_by_passed, ("timed_out", "dead_lettered")),
    "run timeout": (_run_timed_out, ("timed_out", "retry_scheduled")),
    "cost cap reached": (_over_cost_cap, ("budget_exceeded", "dead_lettered")),
    "cancel": (
        lambda p, t: lifecycle.cancel(Scope.of_human(p.alice.id), t),
        ("canceled", "canceled"),
    ),
    "revoke endpoint": (
        lambda p, t: lifecycle.revoke_endpoint(p.alice.id, p.endpoint_a.id),
        ("revoked", "dead_lettered"),
    ),
    "reject": (
        lambda p, t: lifecycle.reject(p.endpoint_a.id, t, owner=OWNER),
        ("failed", "dead_lettered"),
    ),
    "operator complete": (
        lambda p, t: lifecycle.operator_complete(p.alice.id, t),
        ("completed", "done"),
    ),
    "operator fail": (
        lambda p, t: lifecycle.operator_fail(p.alice.id, t),
        ("failed", "retry_scheduled"),
    ),
    "operator release": (
        lambda p, t: lifecycle.operator_release(p.alice.id, t),
        ("released", "requeued"),
    ),
}

# The pairs of docs/guides/lifecycle.md (the attempt row column).
SEED_PAIRS = {
    ("completed", "done"),
    ("failed", "retry_scheduled"),
    ("failed", "dead_lettered"),
    ("released", "requeued"),
    ("lease_expired", "requeued"),
    ("reaped", "requeued"),
    ("reaped", "dead_lettered"),
    ("canceled", "canceled"),
    ("revoked", "dead_lettered"),
    ("timed_out", "dead_lettered"),
    ("timed_out", "retry_scheduled"),
    ("budget_exceeded", "dead_lettered"),
}


@pytest.mark.parametrize("name", list(CLOSERS))
def test_each_closing_transition_closes_exactly_one_attempt_with_its_pair(
    personas: Personas, name: str
) -> None:
    drive, expected = CLOSERS[name]
    todo_id = claimed(personas.endpoint_a.id, max_attempts=2).todo.id

    drive(personas, todo_id)

    closed = [
        (a["outcome"], a["disposition"]) for a in attempt_rows(todo_id) if a["ended_at"] is not None
    ]
    # Exactly one attempt closed, with the pair (the last-attempt case failed once before).
    earlier = [("failed", "retry_scheduled")] if name == "fail on the last attempt" else []
    assert closed == [*earlier, expected]
    assert sum(1 for a in attempt_rows(todo_id) if a["ended_at"] is None) <= 1


def test_the_table_produces_every_pair_the_seed_names_and_no_other() -> None:
    assert {pair for _, pair in CLOSERS.values()} == SEED_PAIRS


def test_the_seed_pairs_use_only_the_schemas_outcomes_and_dispositions() -> None:
    assert {o for o, _ in SEED_PAIRS} == set(Outcome.values)
    assert {d for _, d in SEED_PAIRS} == set(Disposition.values)


Keeper = Callable[[Personas, str], Any]

# Transitions that end no lease: the open attempt stays open, untouched but for the lease.
KEEPERS: dict[str, Keeper] = {
    "heartbeat": lambda p, t: lifecycle.heartbeat(p.endpoint_a.id, t, owner=OWNER),
    "operator extend": lambda p, t: lifecycle.operator_extend(p.alice.id, t),
    "interrupt": lambda p, t: lifecycle.interrupt(
        p.endpoint_a.id, t, owner=OWNER, state="input-required"
    ),
    "interrupt then resume": lambda p, t: (
        lifecycle.interrupt(p.endpoint_a.id, t, owner=OWNER, state="auth-required"),
        lifecycle.resume(p.alice.id, t),
    ),
}


@pytest.mark.parametrize("name", list(KEEPERS))
def test_transitions_that_end_no_lease_leave_the_attempt_open(
    personas: Personas, name: str
) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id

    KEEPERS[name](personas, todo_id)

    (attempt,) = attempt_rows(todo_id)
    assert (attempt["ended_at"], attempt["outcome"], attempt["disposition"]) == (None,) * 3
