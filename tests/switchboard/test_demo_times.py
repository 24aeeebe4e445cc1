"""The demo reads like a morning's work: its todos arrived over the last hour and a half, not
all "30 s ago", every history in order, and the claim its agent holds sits beside a "last seen"
that agrees with it (switchboard/demo.py ``_spread``)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from activity.models import TodoActivity
from attempts.models import TodoAttempt
from switchboard import demo
from switchboard.models import Endpoint
from switchboard.scope import Scope
from todos import fleet
from todos.models import Todo

pytestmark = pytest.mark.django_db


def test_the_demo_todos_arrive_over_time_and_the_agent_was_seen(transactional_db: None) -> None:
    seeded = demo.seed("correct horse battery staple")
    assert seeded is not None
    todos = {t.id: t for t in Todo.objects.all()}
    ids = seeded.todo_ids
    assert len({t.created_at for t in todos.values()}) == len(todos)
    now = timezone.now()
    for label, minutes in demo.AGES_MINUTES.items():
        age = now - todos[ids[label]].created_at
        assert dt.timedelta(minutes=minutes) <= age < dt.timedelta(minutes=minutes, seconds=30)
    for attempt in TodoAttempt.objects.all():
        assert attempt.ended_at is None or attempt.claimed_at <= attempt.ended_at
        assert attempt.claimed_at >= todos[attempt.todo_id].created_at
    for row in TodoActivity.objects.all():
        assert row.at >= todos[row.todo_id].created_at
    claimed = todos[ids["claimed"]]
    assert claimed.lease_expires_at is not None and claimed.lease_expires_at > now
    endpoint = Endpoint.objects.get(slug=demo.ENDPOINT_SLUG)
    figures = fleet.fleet(Scope.of_human(endpoint.owner_id), [endpoint.id])[endpoint.id]
    assert figures.claims == 1
    assert figures.last_seen_at is not None
    assert claimed.claimed_at is not None and figures.last_seen_at > claimed.claimed_at
