"""Bulk cancel and retry against rows another transaction is changing right now: a row locked
(a claim in progress) is left alone, never waited for, and a change committed after the
statement's snapshot is re-checked (``transaction=True``: the other side commits for real)."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django.db import connection

from tests.base import Personas
from tests.concurrency.harness import raw_connection
from tests.reach import OWNER, new_todo
from tests.rows import open_attempts, todo_row
from todos import lifecycle
from todos.queries import TodoFilters

pytestmark = pytest.mark.django_db(transaction=True)


def _later() -> dt.datetime:
    with connection.cursor() as cur:
        cur.execute("SELECT now() + interval '1 hour'")
        return cur.fetchone()[0]


def test_bulk_cancel_skips_a_todo_locked_by_a_claim_in_progress(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    free = new_todo(ep).id
    busy = new_todo(ep).id

    with raw_connection() as conn:
        # The claim's lock, held: as claim.sql holds it between its FOR UPDATE and its commit.
        conn.execute("SELECT id FROM todos WHERE id = %s FOR UPDATE", [busy])
        started = time.monotonic()
        result = lifecycle.bulk_cancel(personas.alice.id, TodoFilters(), seen_at=_later())
        waited = time.monotonic() - started
        conn.rollback()

    assert result.acted == (free,)
    assert waited < 5  # SKIP LOCKED: it did not wait for the lock
    assert todo_row(busy)["state"] == "pending"


def test_bulk_cancel_leaves_a_todo_claimed_and_committed_after_the_count(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep).id
    with connection.cursor() as cur:
        cur.execute("SELECT now()")
        seen_at = cur.fetchone()[0]
    time.sleep(0.05)  # the claim's now() is later than the count's

    lifecycle.claim(ep, todo_id, owner=OWNER)  # commits: autocommit
    result = lifecycle.bulk_cancel(personas.alice.id, TodoFilters(), seen_at=seen_at)

    assert result.acted == ()
    assert todo_row(todo_id)["state"] == "claimed"
    assert len(open_attempts(todo_id)) == 1
