"""The change feed's announcer (switchboard/lib/changefeed.py, docs/decisions/0033): a statement's
announcements leave after its commit, from a notify-only transaction of their own, batched, in
order, and survive a lost connection; what it had to drop is replaced by a resync.

A second psycopg connection LISTENs, as every process's listener does; the tests commit for real.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import transaction

from switchboard.lib import changefeed
from switchboard.lib.changefeed import Announcer, Change
from tests.base import Personas
from tests.concurrency.harness import raw_connection
from tests.reach import OWNER, new_todo
from todos import lifecycle

# The lifecycle's tests commit; the announcer's own need only the test database to exist (their
# connections are their own).
committing = pytest.mark.django_db(transaction=True)
pytestmark = pytest.mark.django_db

WAIT = 5.0
QUIET = 0.3


@pytest.fixture
def listener() -> Iterator[psycopg.Connection[Any]]:
    with raw_connection(autocommit=True) as conn:
        conn.execute(f"LISTEN {changefeed.CHANNEL}")
        yield conn


def heard(
    conn: psycopg.Connection[Any], n: int | None, timeout: float = WAIT
) -> list[dict[str, Any]]:
    """The payloads heard: ``n`` of them (None: all within ``timeout``)."""
    return [json.loads(note.payload) for note in conn.notifies(timeout=timeout, stop_after=n)]


@committing
def test_a_transition_announces_only_after_its_transaction_commits(
    personas: Personas, listener: psycopg.Connection[Any]
) -> None:
    ep = personas.endpoint_a.id
    with transaction.atomic():
        todo = new_todo(ep)
        assert changefeed.ANNOUNCER.flush()
        assert heard(listener, 1, QUIET) == []  # nothing before the commit
    assert [(p["kind"], p["todo_id"]) for p in heard(listener, 1)] == [("ready", todo.id)]


@committing
def test_a_rolled_back_transition_announces_nothing(
    personas: Personas, listener: psycopg.Connection[Any]
) -> None:
    class Undo(Exception):
        pass

    def create_then_roll_back() -> None:
        with transaction.atomic():
            new_todo(personas.endpoint_a.id)
            raise Undo

    with pytest.raises(Undo):
        create_then_roll_back()
    assert changefeed.ANNOUNCER.flush()
    assert heard(listener, 1, QUIET) == []


@committing
def test_the_statement_itself_notifies_nobody(
    personas: Personas, listener: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No pg_notify in the transition's own transaction (whose commit would then hold the
    notification queue's lock through its WAL flush): with the announcer silenced, nothing."""
    sent: list[str] = []
    monkeypatch.setattr(changefeed, "announce", lambda payloads: sent.extend(payloads))
    ep = personas.endpoint_a.id
    todo = new_todo(ep)
    lifecycle.claim_next(ep, ["default"], owner=OWNER)
    lifecycle.complete(ep, todo.id, owner=OWNER)
    assert heard(listener, 1, QUIET) == []
    assert [json.loads(p)["kind"] for p in sent] == ["ready", "changed", "changed"]


def test_announcements_go_in_order_and_in_batches(listener: psycopg.Connection[Any]) -> None:
    announcer = Announcer()
    try:
        payloads = [json.dumps({"kind": "changed", "todo_id": f"td_{i}"}) for i in range(200)]
        for payload in payloads:
            announcer.announce([payload])
        assert announcer.flush()
        assert [p["todo_id"] for p in heard(listener, 200)] == [f"td_{i}" for i in range(200)]
        # Announced faster than a round trip: far fewer transactions than announcements.
        assert announcer.sent < 50
    finally:
        announcer.close()
    assert announcer.backend_pid is None


def test_an_announcement_survives_its_connection_being_killed(
    listener: psycopg.Connection[Any],
) -> None:
    announcer = Announcer()
    try:
        announcer.announce(['{"kind": "changed", "todo_id": "td_first"}'])
        assert announcer.flush()
        pid = announcer.backend_pid
        assert pid is not None
        listener.execute("SELECT pg_terminate_backend(%s)", [pid])
        announcer.announce(['{"kind": "changed", "todo_id": "td_second"}'])
        assert announcer.flush()
        assert [p["todo_id"] for p in heard(listener, 2)] == ["td_first", "td_second"]
        assert announcer.backend_pid not in (None, pid)
    finally:
        announcer.close()


def test_announcements_it_had_to_drop_become_one_resync(
    listener: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the database is unreachable it holds at most ANNOUNCE_MAX_PENDING; the oldest go,
    and once it sends again every consumer is told to re-read before the rest arrive."""
    monkeypatch.setattr(changefeed, "ANNOUNCE_MAX_PENDING", 3)
    monkeypatch.setattr(changefeed, "BACKOFF_FIRST_SECONDS", 0.01)
    down = True
    tried = threading.Event()

    def connect() -> psycopg.Connection[Any]:
        tried.set()
        if down:
            raise psycopg.OperationalError("the database is down")
        return changefeed._announcer_connect()

    announcer = Announcer(connect)
    try:
        # The first announcement's send is failing before the others arrive, whatever the
        # machine's load, so the five behind it overflow the three it may hold.
        announcer.announce([json.dumps({"kind": "changed", "todo_id": "td_0"})])
        assert tried.wait(5)
        for i in range(1, 6):
            announcer.announce([json.dumps({"kind": "changed", "todo_id": f"td_{i}"})])
        assert not announcer.flush(timeout=0.2)
        down = False
        assert announcer.flush()
        got = heard(listener, None, QUIET)
        assert got[0] == {"kind": "resync"}
        assert Change.parse(json.dumps(got[0])) is changefeed.RESYNC_CHANGE
        # What it held on to arrives after the resync, in order, the newest kept.
        ids = [p["todo_id"] for p in got[1:]]
        assert ids == sorted(ids) and ids[-1] == "td_5" and 3 <= len(ids) < 6
    finally:
        announcer.close()
