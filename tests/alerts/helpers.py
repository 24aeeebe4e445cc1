"""What the alerts tests set up: alice's webhook channel on the loopback receiver
(tests/alerts/conftest.py), a dead-lettered todo for it to hear of, and the race tests' look at
who waits for the evaluation's lock."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from alerts import channels, sweep
from alerts.models import AlertChannel
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
