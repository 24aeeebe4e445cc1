"""Usage and cost from spans (otlp/usage.py, otlp/prices.py, otlp/sql/store.sql, rollup.sql).

The three fixtures under ``tests/otlp/fixtures/`` are traces shaped like the OpenAI Agents SDK's,
LangGraph's through OpenInference and Claude Code's, each with an aggregate span carrying its
children's usage: the totals reconcile exactly to the hand-computed cost in the fixture, so no
model call is counted twice and no aggregate once.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from attempts.models import TodoAttempt
from otlp import ingest, prices, usage
from otlp.models import TodoSpan, UsageHour
from tests.base import Personas
from tests.otlp.helpers import SpanSpec, claimed_with_trace, request, span_id, trace_id
from todos.models import Todo

FIXTURES = Path(__file__).parent / "fixtures"
FRAMEWORKS = ("openai_agents", "langgraph_openinference", "claude_code")
START_NS = 1_760_000_000_000_000_000  # 2025-10-09, after every test price's effective_from


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


def specs(data: dict[str, Any], trace: bytes, start_ns: int = START_NS) -> list[SpanSpec]:
    ids = {s["id"]: span_id() for s in data["spans"]}
    return [
        SpanSpec(
            trace,
            span=ids[s["id"]],
            parent=ids[s["parent"]] if s.get("parent") else b"",
            name=s["name"],
            kind=s["kind"],
            start_ns=start_ns + i * 1_000_000,
            attributes=s["attributes"],
        )
        for i, s in enumerate(data["spans"])
    ]


def send(endpoint_id: Any, spans: list[SpanSpec]) -> ingest.Outcome:
    body = request(spans).SerializeToString()
    return ingest.ingest(endpoint_id, body, "application/x-protobuf", None, 10_000_000)


@pytest.fixture
def test_prices(db: None) -> None:
    prices.load(prices.parse((FIXTURES / "prices.csv").read_text()), "tests")


def values(attributes: dict[str, Any]) -> dict[str, AnyValue]:
    out = {}
    for k, v in attributes.items():
        if isinstance(v, bool):
            out[k] = AnyValue(bool_value=v)
        elif isinstance(v, int):
            out[k] = AnyValue(int_value=v)
        elif isinstance(v, float):
            out[k] = AnyValue(double_value=v)
        else:
            out[k] = AnyValue(string_value=v)
    return out


# --- the rule, pure ----------------------------------------------------------------------------


def test_only_model_calls_count_and_aggregates_are_refused_with_a_reason() -> None:
    agent = values({"gen_ai.operation.name": "invoke_agent", "gen_ai.usage.input_tokens": 9})
    assert usage.extract("invoke_agent A", "agent", agent) == (None, usage.NOT_MODEL_CALL)
    chat = values({"gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 9})
    got, why = usage.extract("chat m", "llm", chat)
    assert why is None and got is not None and (got.model, got.input, got.output) == ("m", 9, 0)
    assert usage.extract("work", "other", values({"x": 1})) == (None, None)


@pytest.mark.parametrize(
    "bad",
    [-1, "12", True, 1.5, 10**12 + 1],
)
def test_a_bad_count_counts_nothing_of_the_span(bad: Any) -> None:
    attributes = values({"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5})
    attributes["gen_ai.usage.output_tokens"] = values({"v": bad})["v"]
    assert usage.extract("chat m", "llm", attributes) == (None, usage.BAD_COUNT)


def test_a_sub_count_above_its_whole_is_refused() -> None:
    attributes = values(
        {"gen_ai.usage.input_tokens": 10, "gen_ai.usage.cache_read.input_tokens": 11}
    )
    assert usage.extract("chat m", "llm", attributes) == (None, usage.BAD_COUNT)


def test_the_model_prefers_the_response_then_request_then_openinference_name() -> None:
    both = values(
        {
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024-08-06",
            "llm.model_name": "x",
            "gen_ai.usage.input_tokens": 1,
        }
    )
    got, _ = usage.extract("chat", "llm", both)
    assert got is not None and got.model == "gpt-4o-2024-08-06"


# --- prices, pure ------------------------------------------------------------------------------


def test_a_price_file_refuses_negatives_overlaps_and_a_wrong_header() -> None:
    header = ",".join(prices.HEADER)
    with pytest.raises(prices.PriceError, match="negative"):
        prices.parse(f"{header}\nm,,2025-01-01,-1,1,,,\n")
    with pytest.raises(prices.PriceError, match="twice"):
        prices.parse(f"{header}\nm,,2025-01-01,1,1,,,\nm,,2025-01-01,2,2,,,\n")
    with pytest.raises(prices.PriceError, match="header"):
        prices.parse("model,input\nm,1\n")
    with pytest.raises(prices.PriceError, match="not a number"):
        prices.parse(f"{header}\nm,,2025-01-01,abc,1,,,\n")
    rows = prices.parse(f"{header}\nm,,2025-01-01,1,,,,\n")
    assert rows[0].output is None


def test_the_shipped_default_file_parses_and_names_its_sources() -> None:
    text = prices.DEFAULT_FILE.read_text()
    assert "anthropic.com" in text and "openai.com" in text
    assert len(prices.parse(text)) >= 10


def test_a_span_is_priced_by_the_row_in_effect_at_its_start_and_the_most_specific_pattern() -> None:
    header = ",".join(prices.HEADER)
    book = prices.PriceBook(
        prices.parse(
            f"{header}\nclaude-opus-4*,,2025-01-01,15,75,,,\n"
            "claude-opus-4-5*,,2025-01-01,5,25,,,\nclaude-opus-4-5*,,2026-01-01,4,20,,,\n"
        )
    )
    call = usage.Usage("claude-opus-4-5-x", None, input=1_000_000, output=0)
    assert book.price(call, dt.date(2025, 6, 1)) == Decimal(5)
    assert book.price(call, dt.date(2026, 6, 1)) == Decimal(4)
    assert book.price(call, dt.date(2024, 6, 1)) is None  # before any row: unpriced
    older = usage.Usage("claude-opus-4-1", None, input=1_000_000)
    assert book.price(older, dt.date(2025, 6, 1)) == Decimal(15)
    # A type used whose price is empty: unpriced, never $0.
    cached = usage.Usage("claude-opus-4-1", None, input=10, cache_read=5)
    assert book.price(cached, dt.date(2025, 6, 1)) is None


# --- the ingest --------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("name", FRAMEWORKS)
def test_a_framework_trace_reconciles_exactly_to_the_hand_computed_cost(
    personas: Personas, test_prices: None, name: str
) -> None:
    data = fixture(name)
    expected = data["expected"]
    trace = trace_id()
    claim = claimed_with_trace(personas.endpoint_a.id, trace)

    outcome = send(personas.endpoint_a.id, specs(data, trace))
    assert outcome.accepted == len(data["spans"])

    todo = Todo.objects.get(id=claim.todo.id)
    attempt = TodoAttempt.objects.get(todo_id=claim.todo.id, seq=1)
    for row in (todo, attempt):
        assert row.input_tokens == expected["input"]
        assert row.output_tokens == expected["output"]
        assert row.cache_read_tokens == expected["cache_read"]
        assert row.cache_write_tokens == expected["cache_write"]
        assert row.reasoning_tokens == expected["reasoning"]
        assert row.cost_usd == Decimal(expected["cost_usd"])
        assert row.unpriced_tokens == 0
    counted = TodoSpan.objects.filter(todo_id=claim.todo.id, input_tokens__isnull=False)
    assert counted.count() == expected["model_calls"]
    assert counted.filter(category="llm").count() == expected["model_calls"]
    hour = UsageHour.objects.get(endpoint_id=personas.endpoint_a.id, queue="q")
    assert hour.cost_usd == Decimal(expected["cost_usd"])
    # The hour it arrived in, not the one the fixture's spans are dated (2025-10-09 08:00).
    arrived = TodoSpan.objects.filter(todo_id=claim.todo.id).values_list("received_at", flat=True)
    assert {hour.hour} == {t.replace(minute=0, second=0, microsecond=0) for t in arrived}


@pytest.mark.django_db
def test_a_resent_batch_counts_once_and_a_corrected_span_replaces_its_usage(
    personas: Personas, test_prices: None
) -> None:
    data = fixture("openai_agents")
    trace = trace_id()
    claim = claimed_with_trace(personas.endpoint_a.id, trace)
    spans = specs(data, trace)
    send(personas.endpoint_a.id, spans)
    send(personas.endpoint_a.id, spans)  # an exporter's retry: nothing moves
    chat3 = next(s for s in spans if s.name == "chat o4-mini")
    chat3.duration_ns += 1_000  # re-sent with a corrected end and a corrected count
    chat3.attributes = {**chat3.attributes, "gen_ai.usage.output_tokens": 1000}
    send(personas.endpoint_a.id, [chat3])

    todo = Todo.objects.get(id=claim.todo.id)
    assert todo.output_tokens == 1105 + 100
    # chat3 now (2000*1.1 + 360*4.4 + 640*4.4)/1e6 = 0.0066, was 0.00616
    assert todo.cost_usd == Decimal("0.01183") + Decimal("0.00044")
    attempt = TodoAttempt.objects.get(todo_id=claim.todo.id, seq=1)
    assert attempt.cost_usd == todo.cost_usd
    assert UsageHour.objects.get(endpoint_id=personas.endpoint_a.id).cost_usd == todo.cost_usd


@pytest.mark.django_db
def test_an_unknown_model_is_counted_in_tokens_as_unpriced_never_as_zero_dollars(
    personas: Personas, test_prices: None
) -> None:
    trace = trace_id()
    claim = claimed_with_trace(personas.endpoint_a.id, trace)
    spans = [
        SpanSpec(
            trace,
            name="chat mystery",
            start_ns=START_NS,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "mystery-1",
                "gen_ai.usage.input_tokens": 700,
                "gen_ai.usage.output_tokens": 50,
            },
        )
    ]
    send(personas.endpoint_a.id, spans)
    todo = Todo.objects.get(id=claim.todo.id)
    assert (todo.input_tokens, todo.output_tokens, todo.unpriced_tokens) == (700, 50, 750)
    assert todo.cost_usd == 0
    span = TodoSpan.objects.get(todo_id=claim.todo.id)
    assert span.cost_usd is None and span.model == "mystery-1"


@pytest.mark.django_db
def test_bad_usage_is_not_counted_and_the_span_is_kept(
    personas: Personas, test_prices: None
) -> None:
    trace = trace_id()
    claim = claimed_with_trace(personas.endpoint_a.id, trace)
    bad = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
    spans = [
        SpanSpec(trace, name="neg", attributes={**bad, "gen_ai.usage.input_tokens": -5}),
        SpanSpec(trace, name="text", attributes={**bad, "gen_ai.usage.input_tokens": "500"}),
        SpanSpec(trace, name="huge", attributes={**bad, "gen_ai.usage.output_tokens": 10**13}),
        SpanSpec(
            trace,
            name="tool",
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.usage.input_tokens": 5},
        ),
    ]
    outcome = send(personas.endpoint_a.id, spans)
    assert outcome.accepted == 4
    todo = Todo.objects.get(id=claim.todo.id)
    assert (todo.input_tokens, todo.output_tokens, todo.cost_usd) == (0, 0, 0)
    assert TodoSpan.objects.filter(todo_id=claim.todo.id, input_tokens__isnull=True).count() == 4
