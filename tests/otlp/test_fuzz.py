"""A property test of decode → bind → translate → store over generated requests.

Requests are built from random spans (valid and invalid ids, any text, any attribute values,
times in any order, this tenant's todos, another's, unknown ones), encoded as protobuf or
OTLP/JSON, maybe compressed, maybe corrupted. For every one:

- nothing escapes but a ``Refused`` with 400, 413 or 415 (the receiver's only non-200 answers
  for a body), so no input is a 500;
- nothing invalid is stored: every row the translator makes obeys the table's rules, and the
  database's own CHECKs accept it;
- every span is accounted for: stored, dropped at a cap, unbound or invalid, summing to what
  the request held; and only this tenant's todos receive any.

Bounded for CI: ``max_examples`` and no per-example deadline (the first example pays for the
database's warm-up); the whole test takes a few seconds.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from typing import Any

import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from otlp import decode, translate
from otlp.ingest import prepare
from otlp.models import (
    ATTRIBUTES_MAX_BYTES,
    NAME_MAX_BYTES,
    STATUS_MESSAGE_MAX_BYTES,
    TOOL_MAX_BYTES,
)
from otlp.store import store
from tests.base import Personas
from tests.otlp.helpers import claimed_with_trace, trace_id

CAP = 256 * 1024
pytestmark = pytest.mark.django_db


@pytest.fixture
def world(personas: Personas) -> dict[str, Any]:
    traces = [trace_id() for _ in range(3)]
    own = [claimed_with_trace(personas.endpoint_a.id, traces[i], queue=f"q{i}") for i in range(2)]
    foreign = claimed_with_trace(personas.endpoint_b.id, traces[2])
    return {
        "endpoint": personas.endpoint_a.id,
        "own_todos": [c.todo.id for c in own],
        "foreign_todo": foreign.todo.id,
        "traces": traces,
    }


KEYS = [*translate.ATTRIBUTES[:12], *translate.CONTENT[:3], "random.key", "service.name"]
texts = st.text(max_size=80) | st.text(min_size=200, max_size=2000)
scalars = st.one_of(
    texts,
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.binary(max_size=40),
)


def _any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    return AnyValue(string_value=value)


@st.composite
def spans(draw: st.DrawFn, world: dict[str, Any]) -> Span:
    trace = draw(
        st.one_of(
            st.sampled_from(world["traces"]),
            st.binary(min_size=16, max_size=16),
            st.sampled_from([b"", b"\0" * 16, b"short"]),
        )
    )
    attributes = draw(st.dictionaries(st.sampled_from(KEYS), scalars, max_size=6))
    todo = draw(
        st.none() | st.sampled_from([*world["own_todos"], world["foreign_todo"], "td_unknown", ""])
    )
    if todo is not None:
        attributes[translate.TODO_ATTRIBUTE] = todo
        if draw(st.booleans()):
            attributes[translate.SEQ_ATTRIBUTE] = draw(st.integers(-1, 3) | st.just("1"))
    start = draw(
        st.integers(0, 2**64 - 1) | st.integers(1_600_000_000 * 10**9, 1_900_000_000 * 10**9)
    )
    end = draw(st.integers(0, 2**64 - 1) | st.just(start) | st.integers(start, start + 10**12))
    return Span(
        trace_id=trace,
        span_id=draw(st.binary(min_size=8, max_size=8) | st.sampled_from([b"", b"\0" * 8, b"x"])),
        parent_span_id=draw(st.just(b"") | st.binary(min_size=8, max_size=8) | st.just(b"abc")),
        name=draw(texts),
        kind=draw(st.integers(0, 9)),  # type: ignore[arg-type]
        start_time_unix_nano=start,
        end_time_unix_nano=min(end, 2**64 - 1),
        attributes=[KeyValue(key=k, value=_any_value(v)) for k, v in attributes.items()],
        status=Status(code=draw(st.integers(0, 4)), message=draw(texts)),  # type: ignore[arg-type]
    )


@st.composite
def bodies(draw: st.DrawFn, world: dict[str, Any]) -> tuple[bytes, str, str | None, int | None]:
    """(body, content type, content encoding, spans it holds; None when corrupted)."""
    resource = Resource(
        attributes=[
            KeyValue(key=k, value=_any_value(v))
            for k, v in draw(st.dictionaries(st.sampled_from(KEYS), scalars, max_size=3)).items()
        ]
    )
    groups = draw(st.lists(st.lists(spans(world), max_size=6), min_size=0, max_size=3))
    message = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(resource=resource, scope_spans=[ScopeSpans(spans=group)])
            for group in groups
        ]
    )
    count: int | None = sum(len(g) for g in groups)
    if draw(st.booleans()):
        content_type, raw = decode.PROTOBUF, message.SerializeToString()
    else:
        content_type, raw = decode.JSON, _otlp_json(message)
    encoding = draw(st.sampled_from([None, "gzip", "deflate"]))
    if encoding == "gzip":
        raw = gzip.compress(raw)
    elif encoding == "deflate":
        raw = zlib.compress(raw)
    if draw(st.integers(0, 4)) == 0 and raw:
        at = draw(st.integers(0, len(raw) - 1))
        raw = raw[:at] + draw(st.binary(max_size=8)) + raw[at + 1 :]
        count = None
    return raw, content_type, encoding, count


def _otlp_json(message: ExportTraceServiceRequest) -> bytes:
    """OTLP/JSON as exporters write it: ids in hex, 64-bit integers as strings."""
    document = json_format.MessageToDict(message)
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for field in ("traceId", "spanId", "parentSpanId"):
                    if field in span:
                        span[field] = base64.b64decode(span[field]).hex()
    return json.dumps(document).encode()


def _check_row(row: translate.Row, own: list[str]) -> None:
    assert row.todo_id in own
    assert len(row.trace_id) == 16 and any(row.trace_id)
    assert len(row.span_id) == 8 and any(row.span_id)
    assert row.parent_span_id is None or len(row.parent_span_id) == 8
    assert len(row.name.encode()) <= NAME_MAX_BYTES and "\0" not in row.name
    assert row.category in translate.CATEGORIES
    assert row.tool is None or len(row.tool.encode()) <= TOOL_MAX_BYTES
    assert row.status_code in ("unset", "ok", "error")
    assert (
        row.status_message is None or len(row.status_message.encode()) <= STATUS_MESSAGE_MAX_BYTES
    )
    assert row.end_us >= row.start_us
    attributes = json.loads(row.attributes)
    size = len(json.dumps(attributes, ensure_ascii=False, separators=(", ", ": ")).encode())
    assert size <= ATTRIBUTES_MAX_BYTES and "\\u0000" not in row.attributes


def test_any_request_is_answered_and_every_span_accounted_for(world: dict[str, Any]) -> None:
    @settings(
        max_examples=120,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )
    @given(bodies(world), st.booleans())
    def check(generated: tuple[bytes, str, str | None, int | None], content: bool) -> None:
        body, content_type, encoding, count = generated
        status = None
        try:
            prepared = prepare(world["endpoint"], body, content_type, encoding, CAP, content)
        except decode.Refused as refused:
            status = refused.status
        if status is not None:
            assert status in (400, 413, 415)
            assert count is None or status != 415  # the types and encodings sent are valid
            return
        for row in prepared.rows:
            _check_row(row, world["own_todos"])
        stored = store(prepared.rows, prepared.new_bindings, attempt_cap=50, todo_cap=80)
        assert stored.accepted + stored.dropped == len(prepared.rows)
        if count is not None:
            assert len(prepared.rows) + prepared.unbound + prepared.invalid == count

    check()
