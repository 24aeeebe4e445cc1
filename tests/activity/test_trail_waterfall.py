"""The trail page draws each attempt's spans as a waterfall, from numbers the server formats."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from otlp import partitions
from otlp.store import store
from otlp.translate import collect, translate
from switchboard.lib.sql import fetch_all
from tests.base import Personas
from tests.otlp.helpers import SpanSpec, claimed_with_trace, request, trace_id

pytestmark = pytest.mark.django_db

BASE_NS = 1_700_000_000_000_000_000


def spans(todo_id: str, seq: int, specs: list[SpanSpec]) -> None:
    rows = [translate(c, todo_id, seq, False) for c in collect(request(specs)).candidates]
    assert store(rows, set(), attempt_cap=10_000, todo_cap=10_000).accepted == len(rows)


def page(client: Client, todo_id: str) -> str:
    response = client.get(reverse("todo_detail", args=[todo_id]))
    assert response.status_code == 200
    return response.content.decode()


def test_an_attempts_spans_are_drawn_as_bars_in_a_tree(
    alice_client: Client, personas: Personas
) -> None:
    trace = trace_id()
    claim = claimed_with_trace(personas.endpoint_a.id, trace)
    root = SpanSpec(
        trace,
        name="invoke_agent fixer",
        start_ns=BASE_NS,
        duration_ns=10**9,
        attributes={"gen_ai.operation.name": "invoke_agent"},
    )
    child = SpanSpec(
        trace,
        name="chat claude",
        parent=root.span,
        start_ns=BASE_NS + 2 * 10**8,
        duration_ns=4 * 10**8,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": 1200,
            "gen_ai.usage.output_tokens": 300,
        },
    )
    spans(claim.todo.id, claim.attempt_seq, [root, child])

    html = page(alice_client, claim.todo.id)

    assert 'class="sb-waterfall"' in html
    bars = re.findall(r'<span class="sb-bar (sb-cat-[a-z]+)" style="([^"]*)"', html)
    assert [c for c, _ in bars] == ["sb-cat-agent", "sb-cat-llm"]
    assert bars[0][1] == "--sb-at:0.00%;--sb-len:100.00%"
    assert bars[1][1] == "--sb-at:20.00%;--sb-len:40.00%"
    # No price covers the model: its tokens are shown, and "unpriced", never $0.
    assert "unpriced · 1,200 in / 300 out tokens" in html


def test_span_text_never_names_a_class_or_reaches_a_style(
    alice_client: Client, personas: Personas
) -> None:
    trace = trace_id()
    claim = claimed_with_trace(personas.endpoint_a.id, trace)
    evil = '"><script>alert(1)</script><span style="x'
    spans(
        claim.todo.id,
        claim.attempt_seq,
        [SpanSpec(trace, name=evil, start_ns=BASE_NS, attributes={"gen_ai.operation.name": evil})],
    )

    html = page(alice_client, claim.todo.id)

    assert "<script>alert(1)</script>" not in html
    assert re.findall(r'class="sb-bar ([^"]*)"', html) == ["sb-cat-other"]


def test_the_page_reads_spans_in_one_query_however_many_attempts(
    alice_client: Client,
    personas: Personas,
    django_assert_max_num_queries: Callable[..., Any],
) -> None:
    from todos import lifecycle

    trace = trace_id()
    # Each release spends an attempt (docs/guides/lifecycle.md): budget for six.
    claim = claimed_with_trace(personas.endpoint_a.id, trace, queue="w", max_attempts=6)
    todo_id = claim.todo.id
    for n in range(5):
        spans(todo_id, claim.attempt_seq + n, [SpanSpec(trace, name=f"s{n}", start_ns=BASE_NS)])
        lifecycle.release(personas.endpoint_a.id, todo_id, owner="endpoint:agent")
        lifecycle.claim(personas.endpoint_a.id, todo_id, owner="endpoint:agent")
    page(alice_client, todo_id)  # warm the per-process caches

    with django_assert_max_num_queries(8):
        html = page(alice_client, todo_id)
    assert html.count('class="sb-waterfall"') == 5


def test_spans_dropped_over_the_cap_are_counted_in_the_head(
    alice_client: Client, personas: Personas
) -> None:
    trace = trace_id()
    claim = claimed_with_trace(personas.endpoint_a.id, trace)
    specs = [SpanSpec(trace, name=f"s{n}", start_ns=BASE_NS + n) for n in range(3)]
    rows = [translate(c, claim.todo.id, 1, False) for c in collect(request(specs)).candidates]
    assert store(rows, set(), attempt_cap=1, todo_cap=10_000).dropped_attempt_cap == 2

    html = page(alice_client, claim.todo.id)

    head = re.search(r'<div class="waterfall-head small">.*?</div>', html, re.S)
    assert head, "no waterfall head"
    assert "<span>1</span>" in head.group(0)
    assert '<span class="badge failed">2 dropped over the cap</span>' in head.group(0)
    assert len(re.findall(r'class="sb-bar ', html)) == 1


def test_the_head_says_how_many_spans_retention_removed(
    alice_client: Client, personas: Personas
) -> None:
    trace = trace_id()
    claim = claimed_with_trace(personas.endpoint_a.id, trace)
    specs = [SpanSpec(trace, name=f"s{n}", start_ns=BASE_NS + n) for n in range(3)]
    spans(claim.todo.id, 1, specs)
    # A todo created 41 days ago, two of its spans received 40 days ago: moved into that day's
    # partition, which span retention (30 days by default) then drops whole.
    fetch_all(
        "UPDATE todos SET created_at = now() - interval '41 days' WHERE id = %(id)s",
        {"id": claim.todo.id},
    )
    (row,) = fetch_all("SELECT (now() AT TIME ZONE 'UTC')::date - 40 AS day", {})
    fetch_all("SELECT sb_span_partition_add(%(day)s)", row)
    fetch_all(
        "UPDATE todo_spans SET received_at = %(day)s::timestamp AT TIME ZONE 'UTC'"
        " WHERE todo_id = %(id)s AND name <> 's2'",
        {**row, "id": claim.todo.id},
    )
    assert "removed by retention" not in page(alice_client, claim.todo.id)

    assert partitions.maintain().dropped == [row["day"]]

    html = page(alice_client, claim.todo.id)
    head = re.search(r'<div class="waterfall-head small">.*?</div>', html, re.S)
    assert head, "no waterfall head"
    assert "<span>1</span>" in head.group(0)
    assert (
        '<span class="muted">2 spans older than 30 days were removed by retention</span>'
        in head.group(0)
    )
    assert len(re.findall(r'class="sb-bar ', html)) == 1

    fetch_all("DELETE FROM todo_spans WHERE todo_id = %(id)s", {"id": claim.todo.id})
    html = page(alice_client, claim.todo.id)
    assert "3 spans older than 30 days were removed by retention" in html
