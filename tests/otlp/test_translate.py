"""Translating spans (otlp/translate.py): validity, categories, the allow-list, cuts, masks.

No database: ``collect`` and ``translate`` are pure.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList

from otlp.models import ATTRIBUTES_MAX_BYTES, NAME_MAX_BYTES
from otlp.translate import Candidate, Row, category, clean, collect, tool_label, translate
from tests.otlp.helpers import SpanSpec, request, span_id, trace_id


def one(spec: SpanSpec, resource: dict[str, Any] | None = None) -> Candidate:
    collected = collect(request([spec], resource=resource))
    assert collected.invalid == 0
    (candidate,) = collected.candidates
    return candidate


def row(spec: SpanSpec, capture_content: bool = False) -> Row:
    return translate(one(spec), "td_x", 1, capture_content)


@pytest.mark.parametrize(
    ("name", "attributes", "expected"),
    [
        ("chat m", {"gen_ai.operation.name": "chat"}, "llm"),
        ("x", {"gen_ai.operation.name": "embeddings"}, "llm"),
        ("x", {"gen_ai.operation.name": "execute_tool"}, "tool"),
        ("x", {"gen_ai.operation.name": "invoke_workflow"}, "agent"),
        ("x", {"gen_ai.operation.name": "plan"}, "agent"),
        ("x", {"gen_ai.operation.name": "search_memory"}, "retrieval"),
        ("x", {"gen_ai.operation.name": "upsert_memory"}, "db"),
        ("x", {"gen_ai.operation.name": "delete_memory_store"}, "db"),
        # The GenAI rules come first: an LLM client span also carries http attributes.
        ("x", {"gen_ai.operation.name": "chat", "http.request.method": "POST"}, "llm"),
        ("x", {"gen_ai.operation.name": "custom", "url.full": "https://x"}, "http"),
        ("tools/call f", {"mcp.method.name": "tools/call"}, "tool"),
        ("x", {"mcp.method.name": "resources/read", "gen_ai.tool.name": "t"}, "other"),
        ("x", {"openinference.span.kind": "LLM"}, "llm"),
        ("x", {"openinference.span.kind": "chain"}, "agent"),
        ("x", {"openinference.span.kind": "RERANKER"}, "retrieval"),
        ("x", {"openinference.span.kind": "GUARDRAIL"}, "other"),
        ("x", {"traceloop.span.kind": "workflow"}, "agent"),
        ("x", {"traceloop.span.kind": "task", "db.system": "pg"}, "other"),
        ("x", {"traceloop.span.kind": "unknown", "db.system": "pg"}, "db"),
        ("x", {"gen_ai.system": "anthropic"}, "llm"),
        ("x", {"llm.model_name": "m"}, "llm"),
        ("x", {"tool.name": "grep"}, "tool"),
        ("claude_code.llm_request", {}, "llm"),
        ("claude_code.tool.Bash", {}, "tool"),
        ("claude_code.interaction", {}, "agent"),
        ("x", {"db.query.text": "SELECT 1"}, "db"),
        ("x", {"db.system.name": "postgresql"}, "db"),
        ("x", {"http.method": "GET"}, "http"),
        ("x", {"rpc.system": "grpc"}, "http"),
        ("x", {}, "other"),
    ],
)
def test_the_category_follows_the_genai_conventions_first_rule_wins(
    name: str, attributes: dict[str, Any], expected: str
) -> None:
    assert category(name, attributes) == expected
    assert row(SpanSpec(trace_id(), name=name, attributes=attributes)).category == expected


@pytest.mark.parametrize(
    ("name", "attributes", "expected"),
    [
        ("x", {"gen_ai.tool.name": "read_file", "tool.name": "other"}, "read_file"),
        ("x", {"tool.name": "grep"}, "grep"),
        ("tools/call claim_next", {"mcp.method.name": "tools/call"}, "claim_next"),
        ("tools/call", {"mcp.method.name": "tools/call"}, None),
        ("x", {}, None),
    ],
)
def test_the_tool_label(name: str, attributes: dict[str, Any], expected: str | None) -> None:
    assert tool_label(name, attributes) == expected


def test_only_allow_listed_attributes_are_kept_and_contents_are_off_by_default() -> None:
    spec = SpanSpec(
        trace_id(),
        attributes={
            "gen_ai.request.model": "m",
            "gen_ai.usage.input_tokens": 12,
            "user.email": "someone@example.com",
            "gen_ai.tool.call.arguments": '{"path": "x"}',
            "gen_ai.input.messages": "hello",
        },
    )

    kept = json.loads(row(spec).attributes)

    assert kept == {"gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 12}


def test_contents_are_kept_when_switched_on_cut_and_masked() -> None:
    arguments = '{"path": "/x", "api_key": "sk-abcdefghijklmnopqrstuvwxyz"}' + " " * 10_000
    spec = SpanSpec(
        trace_id(),
        attributes={"gen_ai.tool.call.arguments": arguments, "gen_ai.tool.call.result": "ok"},
    )

    translated = row(spec, capture_content=True)
    kept = json.loads(translated.attributes)

    assert "sk-abcdefghij" not in kept["gen_ai.tool.call.arguments"]
    assert "[redacted:token]" in kept["gen_ai.tool.call.arguments"]
    assert len(kept["gen_ai.tool.call.arguments"].encode()) <= 4096
    assert kept["gen_ai.tool.call.result"] == "ok"
    assert translated.truncated


def test_a_structured_content_value_is_kept_as_its_json_text() -> None:
    messages = AnyValue(
        array_value=ArrayValue(
            values=[
                AnyValue(
                    kvlist_value=KeyValueList(
                        values=[
                            KeyValue(key="role", value=AnyValue(string_value="user")),
                            KeyValue(key="password", value=AnyValue(string_value="hunter22")),
                        ]
                    )
                )
            ]
        )
    )
    collected = collect(request([SpanSpec(trace_id())]))
    candidate = collected.candidates[0]
    candidate.attributes["gen_ai.input.messages"] = messages

    kept = json.loads(translate(candidate, "td_x", 1, True).attributes)

    assert kept["gen_ai.input.messages"] == '[{"role": "user", "password": "[redacted:password]"}]'


def test_names_status_messages_and_values_are_masked_and_cut_to_their_columns() -> None:
    key = "sbk_" + "A" * 43
    spec = SpanSpec(
        trace_id(),
        name=f"call with {key} " + "é" * 300,
        status=2,
        attributes={"url.full": "https://user:s3cr3tpass@host/x", "error.type": "x" * 5000},
    )
    spec_proto = request([spec])
    spec_proto.resource_spans[0].scope_spans[0].spans[0].status.message = f"Bearer {key}"

    translated = translate(collect(spec_proto).candidates[0], "td_x", 1, False)
    kept = json.loads(translated.attributes)

    assert key not in translated.name and "[redacted:switchboard_key]" in translated.name
    assert len(translated.name.encode()) <= NAME_MAX_BYTES
    assert translated.status_message == "Bearer [redacted:switchboard_key]"
    assert translated.status_code == "error"
    assert kept["url.full"] == "https://user:[redacted:url_password]@host/x"
    assert len(kept["error.type"]) == 1024
    assert translated.truncated


def test_attributes_are_kept_under_the_table_cap_dropping_keys_when_they_do_not_fit() -> None:
    big = {key: "x" * 1000 for key in ("gen_ai.agent.name", "gen_ai.workflow.name")}
    many = {f"{k}": "y" * 1020 for k in ("db.system", "db.operation.name", "rpc.service")}
    spec = SpanSpec(
        trace_id(),
        attributes={
            **big,
            **many,
            **{k: "z" * 1020 for k in ("http.method", "server.address", "rpc.method")},
            **{k: "w" * 1020 for k in ("mcp.resource.uri", "gen_ai.conversation.id")},
            **{k: "v" * 1020 for k in ("traceloop.entity.name", "gen_ai.tool.call.id")},
            **{k: "u" * 1020 for k in ("gen_ai.agent.id", "llm.provider", "db.collection.name")},
            **{k: "t" * 1020 for k in ("gen_ai.response.model", "gen_ai.request.model")},
            "gen_ai.tool.call.arguments": "a" * 4000,
        },
    )

    translated = row(spec, capture_content=True)
    size = len(json.dumps(json.loads(translated.attributes), separators=(", ", ": ")).encode())

    assert size <= ATTRIBUTES_MAX_BYTES
    assert translated.truncated
    assert "gen_ai.tool.call.arguments" not in json.loads(translated.attributes)


def test_nul_characters_never_reach_the_database() -> None:
    spec = SpanSpec(trace_id(), name="a\x00b", attributes={"error.type": "x\x00y"})

    translated = row(spec)

    assert translated.name == "ab"
    assert json.loads(translated.attributes) == {"error.type": "xy"}


def test_a_lone_surrogate_is_replaced_should_a_string_ever_carry_one() -> None:
    # Protobuf refuses to hold one and OTLP/JSON's escape of one is a 400 (test_decode.py);
    # clean() still never hands one to PostgreSQL.
    assert clean("a\ud800b", 100) == ("a?b", False)


def test_huge_and_non_finite_numbers_are_kept_as_text() -> None:
    spec = SpanSpec(trace_id(), attributes={"server.port": 1e300, "gen_ai.usage.input_tokens": 3})
    spec_nan = SpanSpec(trace_id(), attributes={"server.port": float("nan")})

    assert json.loads(row(spec).attributes)["server.port"] == "1e+300"
    assert json.loads(row(spec_nan).attributes)["server.port"] == "nan"


def test_kind_status_times_and_parent_are_translated() -> None:
    parent = span_id()
    spec = SpanSpec(trace_id(), parent=parent, kind=3, status=1, start_ns=1_700_000_000_123_456_789)

    translated = row(spec)

    assert (translated.kind, translated.status_code) == ("client", "ok")
    assert translated.start_us == 1_700_000_000_123_456
    assert translated.end_us == translated.start_us + 1000
    assert translated.parent_span_id == parent
    assert row(SpanSpec(trace_id(), parent=b"\0" * 8)).parent_span_id is None
    assert row(SpanSpec(trace_id(), kind=99)).kind == "unspecified"


@pytest.mark.parametrize(
    "change",
    [
        {"trace": b"\0" * 16},
        {"trace": b"short"},
        {"span": b"\0" * 8},
        {"span": b"123456789"},
        {"parent": b"x"},
        {"start_ns": 0},
        {"duration_ns": -1},
    ],
)
def test_invalid_spans_are_counted_not_collected(change: dict[str, Any]) -> None:
    good = SpanSpec(trace_id())
    bad = SpanSpec(**{"trace": trace_id(), **change})

    collected = collect(request([good, bad]))

    assert (len(collected.candidates), collected.invalid, collected.total) == (1, 1, 2)


def test_the_binding_attributes_come_from_the_span_else_its_resource() -> None:
    on_span = one(
        SpanSpec(
            trace_id(), attributes={"switchboard.todo.id": "td_a", "switchboard.attempt.seq": 2}
        ),
        resource={"switchboard.todo.id": "td_r", "switchboard.attempt.seq": 9},
    )
    on_resource = one(
        SpanSpec(trace_id()),
        resource={"switchboard.todo.id": "td_r", "switchboard.attempt.seq": "3"},
    )
    bad_seq = one(
        SpanSpec(
            trace_id(), attributes={"switchboard.todo.id": "td_a", "switchboard.attempt.seq": "x"}
        )
    )

    assert (on_span.todo_hint, on_span.seq_hint) == ("td_a", 2)
    assert (on_resource.todo_hint, on_resource.seq_hint) == ("td_r", 3)
    assert (bad_seq.todo_hint, bad_seq.seq_hint) == ("td_a", None)
