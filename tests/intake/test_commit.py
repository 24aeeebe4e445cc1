"""Intake for real: the event and its todos commit together and the doorbell rings after commit
(transaction=True: nothing is faked by a test transaction here). Two copies of one delivery
racing each other: tests/concurrency/test_intake.py."""

from __future__ import annotations

import json

import pytest

from tests.base import Personas
from tests.concurrency.harness import raw_connection
from tests.intake.conftest import Hook

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_doorbell_rings_once_the_delivery_commits(hook: Hook, personas: Personas):
    with raw_connection(autocommit=True) as listener:
        listener.execute("LISTEN todo_changed")

        response = hook.post(delivery="d-1")

        (todo_id,) = response.json()["todo_ids"]
        notes = [json.loads(n.payload) for n in listener.notifies(timeout=2.0, stop_after=1)]
    assert notes == [
        {
            "kind": "ready",
            "todo_id": todo_id,
            "endpoint_id": str(personas.endpoint_a.id),
            "queue": "ci-fix",
            "state": "pending",
        }
    ]
