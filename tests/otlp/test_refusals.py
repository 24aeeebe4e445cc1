"""Refused spans counted per endpoint, minute and reason (span_refusals, otlp/store.py), and shown
by the fleet over the last hour and day: what the exporters' dropped partial-success message
said, kept where an operator looks. A clean export writes no count."""

from __future__ import annotations

from uuid import UUID

import pytest
from django.test import Client
from django.urls import reverse

from otlp import ingest, store
from otlp.models import SpanRefusals
from switchboard.lib.sql import fetch_all
from switchboard.scope import Scope
from tests.base import Personas
from tests.otlp.helpers import PROTOBUF, SpanSpec, claimed_with_trace, request, trace_id
from todos import fleet

pytestmark = pytest.mark.django_db


def send(endpoint_id: UUID, spans: list[SpanSpec]) -> ingest.Outcome:
    body = request(spans).SerializeToString()
    return ingest.ingest(endpoint_id, body, PROTOBUF, None, 1 << 20)


def counts(endpoint_id: UUID) -> list[tuple[int, int, int]]:
    rows = SpanRefusals.objects.filter(endpoint_id=endpoint_id)
    return list(rows.values_list("unbound", "over_cap", "invalid"))


def test_refused_spans_are_counted_per_minute_and_a_clean_export_writes_nothing(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    bound = trace_id()
    claimed_with_trace(ep, bound)
    assert send(ep, [SpanSpec(trace=bound)]).rejected == 0
    assert counts(ep) == []

    invalid = SpanSpec(trace=b"\x00" * 16)  # an all-zero trace id is no trace
    outcome = send(ep, [SpanSpec(trace=trace_id()), SpanSpec(trace=trace_id()), invalid])
    assert (outcome.unbound, outcome.invalid) == (2, 1)
    send(ep, [SpanSpec(trace=trace_id())])
    assert counts(ep) == [(3, 0, 1)]  # one row for the minute
    assert counts(personas.endpoint_b.id) == []


def test_the_fleet_shows_refusals_by_reason_over_the_hour_and_the_day(
    personas: Personas,
) -> None:
    alice_client = Client()
    alice_client.force_login(personas.alice)
    ep = personas.endpoint_a.id
    store.record_refusals(ep, unbound=5, over_cap=2, invalid=0)
    fetch_all(
        "UPDATE span_refusals SET minute = minute - interval '3 hours' WHERE endpoint_id = %s",
        [ep],
    )
    store.record_refusals(ep, unbound=1, over_cap=0, invalid=1)
    # Older than two days: pruned by the next count.
    fetch_all(
        "INSERT INTO span_refusals (endpoint_id, minute, unbound) VALUES (%s, now() - interval"
        " '3 days', 9)",
        [ep],
    )
    store.record_refusals(ep, unbound=1, over_cap=0, invalid=0)
    figures = fleet.fleet(Scope.of_human(personas.alice.id), [ep])[ep]
    assert (figures.refused_hour.unbound, figures.refused_hour.invalid) == (2, 1)
    assert figures.refused_day.total == 10 and figures.refused_day.over_cap == 2
    assert sum(row[0] for row in counts(ep)) == 7

    page = alice_client.get(reverse("endpoint_detail", args=[personas.endpoint_a.slug]))
    body = page.content.decode()
    assert "Refused spans, last hour" in body and "2 unbound · 1 invalid" in body
    assert "7 unbound · 2 over a cap · 1 invalid" in body
    listing = alice_client.get(reverse("endpoint_list")).content.decode()
    assert "7 unbound · 2 over a cap · 1 invalid" in listing
    # Bob's fleet shows none of it.
    assert fleet.fleet(Scope.of_human(personas.bob.id), [ep]) == {}
