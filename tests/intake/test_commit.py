"""Intake for real: the event and its todos commit together and the doorbell rings after commit;
two copies of one delivery racing each other route it once (transaction=True: nothing is
faked by a test transaction here)."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection

from tests.base import Personas
from tests.concurrency.harness import raw_connection
from tests.intake.conftest import Hook
from todos.models import Event, Todo

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_doorbell_rings_once_the_delivery_commits(hook: Hook, personas: Personas):
    with raw_connection(autocommit=True) as listener:
        listener.execute("LISTEN todo_ready")

        response = hook.post(delivery="d-1")

        (todo_id,) = response.json()["todo_ids"]
        notes = [json.loads(n.payload) for n in listener.notifies(timeout=2.0, stop_after=1)]
    assert notes == [
        {"endpoint_id": str(personas.endpoint_a.id), "queue": "ci-fix", "todo_id": todo_id}
    ]


def test_concurrent_copies_of_one_delivery_route_it_once(hook: Hook):
    results: list[str] = []
    barrier = threading.Barrier(4)

    def deliver() -> None:
        try:
            barrier.wait()
            results.append(hook.post(delivery="same").json()["disposition"])
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(results) == ["duplicate", "duplicate", "duplicate", "routed"]
    assert Todo.objects.count() == 1
    assert Event.objects.filter(disposition="routed").count() == 1
