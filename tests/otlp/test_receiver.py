"""POST /otlp/{slug}/v1/traces over real HTTP, against the product under daphne.

The stock OpenTelemetry Python exporter (protobuf, gzip) for what agents will really send;
hand-built OTLP/JSON (hex ids, as the JS exporter writes them) for the JSON path; raw bytes for
what no exporter sends. Rows are committed (``transaction=True``) for the server to see them.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator

import httpx2
import pytest
from django.db import connection
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from attempts.models import TodoAttempt
from otlp.models import TodoSpan, TodoTraceBinding
from tests.base import Personas
from tests.live import LiveServer
from tests.otlp.helpers import (
    JSON,
    PROTOBUF,
    SpanSpec,
    claimed_with_trace,
    post,
    post_json,
    post_proto,
    request,
    request_json,
    span_id,
    trace_id,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def live(live_daphne: LiveServer) -> LiveServer:
    return live_daphne


def _spans(todo_id: str) -> list[TodoSpan]:
    return list(TodoSpan.objects.filter(todo_id=todo_id).order_by("start_at", "name"))


# --- the easy path: the claim's traceparent ---------------------------------------------------


@pytest.fixture
def tracer_provider(live: LiveServer, personas: Personas) -> Iterator[TracerProvider]:
    exporter = OTLPSpanExporter(
        endpoint=live.url("/otlp/agent-a/v1/traces"),
        headers={"Authorization": f"Bearer {personas.key_a}"},
        compression=Compression.Gzip,
        timeout=30,
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "ci-fixer"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    yield provider
    provider.shutdown()


def test_a_stock_exporters_spans_under_the_claims_traceparent_land_on_that_attempt(
    personas: Personas, tracer_provider: TracerProvider
) -> None:
    # The claim carries no traceparent: one is minted, stored and returned (tools.py); here the
    # lifecycle is called with the trace id the MCP layer would pass.
    trace = trace_id()
    claim = claimed_with_trace(personas.endpoint_a.id, trace)
    traceparent = f"00-{trace.hex()}-{span_id().hex()}-01"
    parent = TraceContextTextMapPropagator().extract({"traceparent": traceparent})
    tracer = tracer_provider.get_tracer("agent")

    with tracer.start_as_current_span(
        "invoke_agent ci-fixer",
        context=parent,
        attributes={"gen_ai.operation.name": "invoke_agent"},
    ):
        with tracer.start_as_current_span(
            "chat claude-sonnet-4",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "claude-sonnet-4",
                "gen_ai.usage.input_tokens": 1200,
                "gen_ai.usage.output_tokens": 80,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool read_file",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "read_file",
                "gen_ai.tool.call.arguments": '{"path": "/etc/passwd"}',
            },
        ):
            pass
    assert tracer_provider.force_flush(30_000)

    spans = _spans(claim.todo.id)
    assert [(s.name, s.category, s.attempt_seq) for s in spans] == [
        ("invoke_agent ci-fixer", "agent", 1),
        ("chat claude-sonnet-4", "llm", 1),
        ("execute_tool read_file", "tool", 1),
    ]
    root, llm, tool = spans
    assert bytes(root.trace_id) == trace
    assert bytes(root.parent_span_id or b"").hex() == traceparent.split("-")[2]
    assert bytes(llm.parent_span_id or b"") == bytes(root.span_id)
    assert tool.tool == "read_file" and tool.service_name == "ci-fixer"
    assert llm.attributes["gen_ai.usage.input_tokens"] == 1200
    # Tool inputs are off by default.
    assert "gen_ai.tool.call.arguments" not in tool.attributes


# --- OTLP/JSON: the attribute, a later child, a stray span ------------------------------------


def test_json_with_hex_ids_binds_by_attribute_then_children_follow_and_strays_are_refused(
    live: LiveServer, personas: Personas
) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, None)
    trace = trace_id()
    root = SpanSpec(trace, name="session", attributes={"switchboard.todo.id": claim.todo.id})

    first = post_json(live, personas.key_a, request_json([root]))

    assert first == {}  # full success: partial_success unset
    assert [s.name for s in _spans(claim.todo.id)] == ["session"]
    assert TodoTraceBinding.objects.filter(todo_id=claim.todo.id, trace_id=trace).exists()

    child = SpanSpec(trace, parent=root.span, name="step", start_ns=root.start_ns + 10)
    stray = SpanSpec(trace_id(), name="elsewhere")
    second = post_json(live, personas.key_a, request_json([child, stray]))

    assert second["partialSuccess"]["rejectedSpans"] == "1"
    assert "1 unbound" in second["partialSuccess"]["errorMessage"]
    assert sorted(s.name for s in _spans(claim.todo.id)) == ["session", "step"]
    assert not TodoSpan.objects.filter(trace_id=stray.trace).exists()
    step = TodoSpan.objects.get(todo_id=claim.todo.id, name="step")
    assert bytes(step.parent_span_id or b"") == root.span and step.attempt_seq == 1


def test_the_same_spans_as_protobuf_and_as_json_store_identical_rows(
    live: LiveServer, personas: Personas
) -> None:
    one = claimed_with_trace(personas.endpoint_a.id, trace_id(), queue="one")
    two = claimed_with_trace(personas.endpoint_a.id, trace_id(), queue="two")

    def batch(todo_id: str) -> list[SpanSpec]:
        trace = trace_id()
        root = SpanSpec(
            trace,
            name="invoke_agent",
            kind=2,
            status=2,
            attributes={
                "switchboard.todo.id": todo_id,
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.usage.input_tokens": 7,
                "http.response.status_code": 200,
                "server.port": 443,
                "error.type": "timeout",
            },
        )
        child = SpanSpec(
            trace,
            parent=root.span,
            name="tools/call claim_next",
            start_ns=root.start_ns + 5_000,
            attributes={"mcp.method.name": "tools/call"},
        )
        return [root, child]

    post_proto(live, personas.key_a, request(batch(one.todo.id), resource={"x": 1}))
    post_json(live, personas.key_a, request_json(batch(two.todo.id), resource={"x": 1}))

    def rows(todo_id: str) -> list[tuple[object, ...]]:
        with connection.cursor() as cur:
            cur.execute(
                """SELECT parent_span_id IS NULL, attempt_seq, name, kind, category, tool,
                          status_code, status_message, service_name, end_at - start_at,
                          attributes - 'switchboard.todo.id', truncated
                     FROM todo_spans WHERE todo_id = %s ORDER BY start_at""",
                [todo_id],
            )
            return cur.fetchall()

    assert rows(one.todo.id) == rows(two.todo.id)
    assert len(rows(one.todo.id)) == 2
    assert rows(one.todo.id)[1][4:6] == ("tool", "claim_next")


# --- tenancy -----------------------------------------------------------------------------------


def test_another_tenants_key_cannot_bind_to_or_see_this_tenants_todos(
    live: LiveServer, personas: Personas
) -> None:
    trace = trace_id()
    alices = claimed_with_trace(personas.endpoint_a.id, trace)
    by_trace = SpanSpec(trace, name="by trace")
    by_attribute = SpanSpec(
        trace_id(), name="by attribute", attributes={"switchboard.todo.id": alices.todo.id}
    )
    unknown = SpanSpec(trace_id(), name="unknown", attributes={"switchboard.todo.id": "td_nope"})

    # Bob's key on Alice's slug is refused outright.
    refused = post(live, personas.key_b, request([by_trace]).SerializeToString())
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith("Bearer ")
    # On his own slug, neither Alice's trace nor her todo id binds, exactly like an unknown id.
    answer = post(
        live, personas.key_b, request([by_trace, by_attribute]).SerializeToString(), slug="agent-b"
    )
    foreign = post(
        live, personas.key_b, request([unknown, unknown]).SerializeToString(), slug="agent-b"
    )

    assert answer.status_code == foreign.status_code == 200
    parsed = ExportTraceServiceResponse.FromString(answer.content)
    assert parsed.partial_success.rejected_spans == 2
    assert (
        parsed.partial_success
        == ExportTraceServiceResponse.FromString(foreign.content).partial_success
    )
    assert not TodoSpan.objects.exists()
    assert not TodoTraceBinding.objects.exists()


# --- refusals ----------------------------------------------------------------------------------


def _status(response: httpx2.Response) -> Status:
    if response.headers["content-type"] == PROTOBUF:
        return Status.FromString(response.content)
    body = response.json()
    return Status(code=body.get("code", 0), message=body["message"])


def test_a_gzip_bomb_is_413_and_costs_no_more_than_the_cap(
    live: LiveServer, personas: Personas
) -> None:
    # 64 MiB of zeros gzip to 64 KiB: under the wire cap, far over the decompressed one.
    bomb = gzip.compress(b"\0" * (64 << 20), compresslevel=9)
    assert len(bomb) < 4 << 20

    answer = post(live, personas.key_a, bomb, headers={"Content-Encoding": "gzip"})

    assert answer.status_code == 413
    assert "decompressed" in _status(answer).message


def test_a_deflate_body_is_accepted_like_gzip(live: LiveServer, personas: Personas) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace := trace_id())
    body = zlib.compress(request([SpanSpec(trace)]).SerializeToString())

    answer = post(live, personas.key_a, body, headers={"Content-Encoding": "deflate"})

    assert answer.status_code == 200, answer.content
    assert len(_spans(claim.todo.id)) == 1


def test_garbage_is_400_and_an_unknown_content_type_415_never_html(
    live: LiveServer, personas: Personas
) -> None:
    garbage = post(live, personas.key_a, b"\xff\xff\xff\xff not a protobuf")
    bad_json = post(live, personas.key_a, b"{not json", JSON)
    plain = post(live, personas.key_a, b"hello", "text/plain")
    bad_gzip = post(live, personas.key_a, b"nope", headers={"Content-Encoding": "gzip"})
    brotli = post(live, personas.key_a, b"x", headers={"Content-Encoding": "br"})

    assert (garbage.status_code, garbage.headers["content-type"]) == (400, PROTOBUF)
    assert (bad_json.status_code, bad_json.headers["content-type"]) == (400, JSON)
    assert (plain.status_code, plain.headers["content-type"]) == (415, JSON)
    assert bad_gzip.status_code == 400
    assert brotli.status_code == 415
    for answer in (garbage, bad_json, plain, bad_gzip, brotli):
        assert _status(answer).message


def test_without_a_key_it_is_401_and_an_unknown_path_404(
    live: LiveServer, personas: Personas
) -> None:
    body = request([SpanSpec(trace_id())]).SerializeToString()

    assert post(live, None, body).status_code == 401
    assert post(live, "sbk_nope", body).status_code == 401
    wrong_path = httpx2.post(live.url("/otlp/agent-a/v1/logs"), content=body, timeout=30)
    assert wrong_path.status_code == 404
    assert wrong_path.headers["content-type"] == JSON
    get = httpx2.get(live.url("/otlp/agent-a/v1/traces"), timeout=30)
    assert (get.status_code, get.headers["allow"]) == (405, "POST")


def test_an_empty_request_succeeds(live: LiveServer, personas: Personas) -> None:
    answer = post(live, personas.key_a, b"")

    assert answer.status_code == 200 and answer.content == b""
    assert post(live, personas.key_a, b"{}", JSON).json() == {}


def test_an_identical_retry_changes_nothing_and_a_corrected_end_is_kept(
    live: LiveServer, personas: Personas
) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace := trace_id())
    spec = SpanSpec(trace, name="once")
    post_proto(live, personas.key_a, request([spec]))
    received = TodoSpan.objects.get(todo_id=claim.todo.id).received_at

    post_proto(live, personas.key_a, request([spec]), gzipped=True)
    assert TodoSpan.objects.get(todo_id=claim.todo.id).received_at == received

    spec.duration_ns *= 3
    post_proto(live, personas.key_a, request([spec]))
    # Corrected over its stored copy, in its partition: received_at is when it was first stored
    # (the partition key, docs/decisions/0040-span-partitions.md), and it is still one span.
    span = TodoSpan.objects.get(todo_id=claim.todo.id)
    assert span.received_at == received
    assert (span.end_at - span.start_at).total_seconds() == pytest.approx(0.003)
    stored = TodoAttempt.objects.get(todo_id=claim.todo.id, seq=1).spans_stored
    assert stored == 1


def test_the_answer_to_a_json_request_is_json_and_its_int64_a_string(
    live: LiveServer, personas: Personas
) -> None:
    stray = SpanSpec(trace_id(), name="stray")
    answer = post(live, personas.key_a, json.dumps(request_json([stray])).encode(), JSON)

    assert answer.status_code == 200
    assert answer.json()["partialSuccess"]["rejectedSpans"] == "1"
