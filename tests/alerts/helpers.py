"""What the alerts tests set up: alice's webhook channel on the loopback receiver
(tests/alerts/conftest.py), a dead-lettered todo for it to hear of, and the race of an
evaluation against what must wait for it (a forget, a retention batch)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

from django.db import connection
from django.utils import timezone

from alerts import channels, sweep
from alerts.models import AlertChannel, RuleKind
from switchboard.lib import direct
from switchboard.lib.sql import fetch_all
from tests.alerts.conftest import Receiver
from tests.base import Personas
from tests.reach import claimed
from todos import lifecycle

TITLE = "nightly build"  # what ``dead_letter`` names its todo


def webhook(personas: Personas, receiver: Receiver, **kw: Any) -> AlertChannel:
    """Alice's webhook channel to ``receiver``, which then checks its signatures."""
    channel, secret = channels.add_channel(personas.alice, webhook=receiver.url, **kw)
    assert secret is not None and secret.startswith("whsec_")
    receiver.secret = secret
    return channel


def dead_letter(endpoint_id: UUID, queue: str = "triage") -> str:
    """A todo titled ``TITLE`` that failed its one attempt for good; its id."""
    todo = claimed(endpoint_id, queue, title=TITLE, max_attempts=1)
    lifecycle.fail(endpoint_id, todo.todo.id, owner="worker-1", summary="red", retryable=False)
    return todo.todo.id


def waiting_on_the_alerts_lock() -> bool:
    """Whether a session waits for the evaluation's lock (``LOCK_ALERTS``) now."""
    rows = fetch_all(
        "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = %(key)s",
        {"key": sweep.LOCK_ALERTS},
    )
    return bool(rows)


def raced_by(action: Callable[[], object], todo_id: str) -> bool:
    """A sweeper's evaluation of the dead letters with ``action`` in between, as two sweepers
    may run them: the evaluation takes its lock and reads what fires (``todo_id``'s dead letter
    among it), then ``action`` starts in a thread of its own, and the evaluation opens its
    alerts once ``action`` waits for the lock, or after 3 s. Whether ``action`` was seen
    waiting; an exception in either thread fails the test."""
    read = threading.Event()
    waited: list[bool] = []
    errors: list[BaseException] = []

    def evaluation() -> None:
        try:
            with direct.advisory_lock(sweep.LOCK_ALERTS) as held:
                assert held
                found = sweep.firings(RuleKind.DEAD_LETTER, timezone.now())
                assert todo_id in [f.todo_id for f in found[0]], found
                read.set()
                deadline = time.monotonic() + 3
                while time.monotonic() < deadline and not waiting_on_the_alerts_lock():
                    time.sleep(0.02)
                waited.append(waiting_on_the_alerts_lock())
                sweep.apply(RuleKind.DEAD_LETTER, *found)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            read.set()
            connection.close()

    def acting() -> None:
        try:
            read.wait(5)
            action()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=evaluation), threading.Thread(target=acting)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert errors == [], errors
    return waited == [True]
