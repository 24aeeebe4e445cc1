"""Reads show the open attempt's real lease: the todo's, not the attempt's sampled copy.

A heartbeat writes the attempt at most once a minute (docs/decisions/0006-heartbeat-sampling.md),
so after a heartbeat with a longer TTL the attempt's own ``lease_expires_at`` lags the lease by
the whole difference. Every read of attempts presents the todo's lease for the open one.
"""

from __future__ import annotations

import datetime as dt

from attempts.types import AttemptView
from switchboard.lib.sql import fetch_all
from switchboard.scope import Scope
from tests.base import Personas
from tests.reach import OWNER, claimed
from tests.rows import attempt_rows, open_attempts, todo_row
from todos import lifecycle, queries


def _lagging(personas: Personas) -> tuple[str, dt.datetime]:
    """A todo claimed for 60 s and then extended to an hour within the sampled write's minute:
    its open attempt's row still says 60 s. Returns the todo id and the real lease."""
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, lease_ttl_seconds=60).todo.id
    lifecycle.heartbeat(ep, todo_id, owner=OWNER, lease_ttl_seconds=60)  # the sampled write
    # Thirty seconds later (the test's transaction has one now()): no attempt write is due.
    fetch_all(
        "UPDATE todos SET attempt_heartbeat_at = now() - interval '30 s' WHERE id = %(id)s",
        {"id": todo_id},
    )
    lifecycle.heartbeat(ep, todo_id, owner=OWNER, lease_ttl_seconds=3600)  # the todo only
    lease = todo_row(todo_id)["lease_expires_at"]
    [stored] = open_attempts(todo_id)
    assert (lease - stored["lease_expires_at"]).total_seconds() >= 3500  # the lag is real
    return todo_id, lease


def test_get_todo_shows_the_open_attempts_real_lease(personas: Personas) -> None:
    todo_id, lease = _lagging(personas)

    for scope in (Scope.of_endpoint(personas.endpoint_a.id), Scope.of_human(personas.alice.id)):
        [attempt] = queries.todo_detail(scope, todo_id).history.attempts
        assert attempt.is_open and attempt.lease_expires_at == lease
        [attempt] = queries.attempts_for_todo(scope, todo_id).attempts
        assert attempt.lease_expires_at == lease


def test_the_trail_shows_the_open_attempts_real_lease(personas: Personas) -> None:
    todo_id, lease = _lagging(personas)

    [row] = queries.trail_attempts(Scope.of_human(personas.alice.id), todo_id)

    assert row.view.lease_expires_at == lease


def test_closed_attempts_keep_their_own_lease(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id, _ = _lagging(personas)
    lifecycle.release(ep, todo_id, owner=OWNER)
    stored = attempt_rows(todo_id)[-1]["lease_expires_at"]
    lifecycle.claim(ep, todo_id, owner=OWNER, lease_ttl_seconds=120)
    new_lease = todo_row(todo_id)["lease_expires_at"]

    detail = queries.todo_detail(Scope.of_endpoint(ep), todo_id).history.attempts
    trail = queries.trail_attempts(Scope.of_endpoint(ep), todo_id)

    assert [a.lease_expires_at for a in detail] == [new_lease, stored]
    assert [t.view.lease_expires_at for t in trail] == [new_lease, stored]


def test_a_paused_todo_keeps_the_attempts_copy(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, lease_ttl_seconds=60).todo.id
    lifecycle.interrupt(ep, todo_id, owner=OWNER, state="input-required")
    [stored] = open_attempts(todo_id)

    [attempt] = queries.todo_detail(Scope.of_endpoint(ep), todo_id).history.attempts

    assert todo_row(todo_id)["lease_expires_at"] is None
    assert attempt.lease_expires_at == stored["lease_expires_at"]


def test_with_lease_replaces_only_the_current_open_attempt() -> None:
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    later = now + dt.timedelta(hours=1)
    base = {
        "todo_id": "td_x",
        "attempt": 1,
        "claimer_kind": "endpoint",
        "claimer_endpoint_id": None,
        "claimer_session": None,
        "owner": OWNER,
        "claimant": None,
        "claimed_at": now,
        "last_heartbeat_at": None,
        "lease_expires_at": now,
        "outcome": None,
        "disposition": None,
        "summary": None,
        "summary_truncated": False,
        "artifact": None,
    }
    open_ = AttemptView(seq=2, ended_at=None, **base)
    closed = AttemptView(seq=1, ended_at=now, **base)

    assert open_.with_lease(2, later).lease_expires_at == later
    assert open_.with_lease(3, later) is open_  # not the todo's current attempt
    assert open_.with_lease(2, None) is open_  # paused: no lease to show
    assert closed.with_lease(1, later) is closed
