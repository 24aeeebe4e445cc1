"""Webhook intake under a race: copies of one delivery arriving at once route it once (the
unique delivery id decides; the losers are stored as duplicates)."""

from __future__ import annotations

import pytest

from tests.concurrency.harness import at_once
from tests.intake.conftest import Hook
from todos.models import Event, Todo

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_copies_of_one_delivery_route_it_once(hook: Hook) -> None:
    results = at_once(4, lambda: hook.post(delivery="same").json()["disposition"])

    assert sorted(results) == ["duplicate", "duplicate", "duplicate", "routed"]
    assert Todo.objects.count() == 1
    assert Event.objects.filter(disposition="routed").count() == 1
