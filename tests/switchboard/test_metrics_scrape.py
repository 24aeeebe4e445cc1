"""What a scrape of /metrics shows: transitions by outcome, the queue gauges (read at most once
per interval, never per scrape) and the request latency of MCP and webhooks (over real HTTP)."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from prometheus_client.parser import text_string_to_metric_families

from tests.base import Personas
from tests.live import LiveServer, mcp_client, run
from tests.reach import OWNER, new_todo, set_created_at
from todos import gauges, lifecycle


def scrape(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape, by name and labels."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def sample(samples: dict[Any, float], name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def django_scrape() -> dict[Any, float]:
    response = Client().get("/metrics")  # the test client is loopback, which may scrape
    assert response.status_code == 200
    return scrape(response.content.decode())


@pytest.mark.django_db
def test_transitions_are_labelled_by_outcome(
    personas: Personas, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):  # counted on commit
        new_todo(personas.endpoint_a.id)

    samples = django_scrape()

    assert (
        sample(samples, "switchboard_todo_transitions_total", transition="create", outcome="ok")
        or 0
    ) >= 1
    assert not any(
        name == "switchboard_todo_transitions_total" and "result" in dict(labels)
        for name, labels in samples
    )


@pytest.mark.django_db
def test_queue_gauges_show_depth_and_oldest_age_per_endpoint_and_queue(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    old = new_todo(ep, "ci")
    set_created_at(old.id, 600)
    new_todo(ep, "ci")
    waiting = new_todo(ep, "triage")
    new_todo(personas.endpoint_b.id, "ci")
    gauges.register().refresh(force=True)

    samples = django_scrape()

    def depth(slug: str, queue: str) -> float | None:
        return sample(samples, gauges.DEPTH, endpoint=slug, queue=queue)

    assert (depth("agent-a", "ci"), depth("agent-a", "triage"), depth("agent-b", "ci")) == (
        2,
        1,
        1,
    )
    age = sample(samples, gauges.AGE, endpoint="agent-a", queue="ci")
    assert age is not None and 600 <= age < 700

    # A claim empties triage; until the next due read the gauges answer from the last one.
    lifecycle.claim(ep, waiting.id, owner=OWNER)
    with CaptureQueriesContext(connection) as queries:
        samples = django_scrape()
    assert not [q for q in queries.captured_queries if "GROUP BY t.endpoint_id" in q["sql"]]
    assert depth("agent-a", "triage") == 1

    with CaptureQueriesContext(connection) as queries:
        assert gauges.register().refresh(force=True)
    assert [q for q in queries.captured_queries if "GROUP BY t.endpoint_id" in q["sql"]]
    samples = django_scrape()
    assert depth("agent-a", "triage") == 0  # emptied: 0, not gone
    assert sample(samples, gauges.AGE, endpoint="agent-a", queue="triage") is None


def test_the_gauges_read_at_most_once_per_interval() -> None:
    reads: list[int] = []
    now = [1000.0]

    def read() -> list[dict[str, Any]]:
        reads.append(1)
        return [{"endpoint": "e", "queue": "q", "depth": 3, "oldest_epoch": 0.0}]

    collector = gauges.QueueGauges(lambda: 30.0, read=read, clock=lambda: now[0])
    for _ in range(5):  # five scrapes in the same second
        list(collector.collect())
    now[0] += 29
    list(collector.collect())
    assert len(reads) == 1
    now[0] += 2
    list(collector.collect())
    assert len(reads) == 2


def test_a_failed_read_keeps_the_last_values() -> None:
    answers: list[Any] = [[{"endpoint": "e", "queue": "q", "depth": 3, "oldest_epoch": 0.0}]]

    def read() -> list[dict[str, Any]]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return list(answer)

    collector = gauges.QueueGauges(lambda: 0.0, read=read)
    list(collector.collect())
    answers.append(RuntimeError("the database is restarting"))
    [depth, _] = list(collector.collect())
    assert [(s.labels, s.value) for s in depth.samples] == [({"endpoint": "e", "queue": "q"}, 3)]


@pytest.mark.django_db(transaction=True)
def test_mcp_and_hook_requests_are_timed(live_daphne: LiveServer, personas: Personas) -> None:
    def counts() -> tuple[float, float]:
        answer = httpx2.get(live_daphne.url("/metrics"), timeout=30)
        assert answer.status_code == 200
        samples = scrape(answer.text)
        mcp = sum(
            v
            for (name, labels), v in samples.items()
            if name == "switchboard_mcp_request_seconds_count" and dict(labels)["method"] == "POST"
        )
        hook = sample(samples, "switchboard_hook_request_seconds_count", status="404") or 0.0
        return mcp, hook

    mcp_before, hook_before = counts()

    async def call() -> None:
        async with mcp_client(live_daphne.mcp_url("agent-a"), personas.key_a, "2026-07-28") as c:
            await c.list_tools()

    run(call())
    answer = httpx2.post(live_daphne.url("/hooks/no-such-source"), content=b"{}", timeout=30)
    assert answer.status_code == 404

    mcp_after, hook_after = counts()
    assert mcp_after > mcp_before
    assert hook_after == hook_before + 1
