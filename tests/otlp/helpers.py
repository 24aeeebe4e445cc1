"""Build OTLP export requests by hand: protobuf messages, their OTLP/JSON twins, and claims."""

from __future__ import annotations

import gzip
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import httpx2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from tests.live import LiveServer
from todos import lifecycle

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


def trace_id() -> bytes:
    return secrets.token_bytes(16)


def span_id() -> bytes:
    return secrets.token_bytes(8)


def now_ns() -> int:
    return time.time_ns()


def value(v: Any) -> AnyValue:
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    return AnyValue(string_value=str(v))


@dataclass
class SpanSpec:
    """One span, as the tests describe it."""

    trace: bytes
    span: bytes = field(default_factory=span_id)
    parent: bytes = b""
    name: str = "work"
    start_ns: int = field(default_factory=now_ns)
    duration_ns: int = 1_000_000
    kind: int = 1
    status: int = 0
    attributes: dict[str, Any] = field(default_factory=dict)

    def proto(self) -> Span:
        return Span(
            trace_id=self.trace,
            span_id=self.span,
            parent_span_id=self.parent,
            name=self.name,
            kind=self.kind,  # type: ignore[arg-type]
            start_time_unix_nano=self.start_ns,
            end_time_unix_nano=self.start_ns + self.duration_ns,
            attributes=[KeyValue(key=k, value=value(v)) for k, v in self.attributes.items()],
            status=Status(code=self.status),  # type: ignore[arg-type]
        )

    def json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "traceId": self.trace.hex(),
            "spanId": self.span.hex(),
            "name": self.name,
            "kind": self.kind,
            "startTimeUnixNano": str(self.start_ns),
            "endTimeUnixNano": str(self.start_ns + self.duration_ns),
            "attributes": [{"key": k, "value": _json_value(v)} for k, v in self.attributes.items()],
            "status": {"code": self.status},
        }
        if self.parent:
            out["parentSpanId"] = self.parent.hex()
        return out


def _json_value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


def request(
    spans: list[SpanSpec], service: str = "agent", resource: dict[str, Any] | None = None
) -> ExportTraceServiceRequest:
    attributes = [KeyValue(key="service.name", value=value(service))]
    attributes += [KeyValue(key=k, value=value(v)) for k, v in (resource or {}).items()]
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=attributes),
                scope_spans=[
                    ScopeSpans(
                        scope=InstrumentationScope(name="tests"),
                        spans=[s.proto() for s in spans],
                    )
                ],
            )
        ]
    )


def request_json(
    spans: list[SpanSpec], service: str = "agent", resource: dict[str, Any] | None = None
) -> dict[str, Any]:
    attributes = [{"key": "service.name", "value": {"stringValue": service}}]
    attributes += [{"key": k, "value": _json_value(v)} for k, v in (resource or {}).items()]
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attributes},
                "scopeSpans": [{"scope": {"name": "tests"}, "spans": [s.json() for s in spans]}],
            }
        ]
    }


def post(
    server: LiveServer,
    key: str | None,
    body: bytes,
    content_type: str = PROTOBUF,
    slug: str = "agent-a",
    headers: dict[str, str] | None = None,
) -> httpx2.Response:
    sent = {"Content-Type": content_type, **(headers or {})}
    if key is not None:
        sent["Authorization"] = f"Bearer {key}"
    return httpx2.post(
        server.url(f"/otlp/{slug}/v1/traces"), content=body, headers=sent, timeout=30
    )


def post_proto(
    server: LiveServer, key: str, message: ExportTraceServiceRequest, *, gzipped: bool = False
) -> ExportTraceServiceResponse:
    body = message.SerializeToString()
    headers = {"Content-Encoding": "gzip"} if gzipped else {}
    if gzipped:
        body = gzip.compress(body)
    answer = post(server, key, body, headers=headers)
    assert answer.status_code == 200, (answer.status_code, answer.content)
    assert answer.headers["content-type"] == PROTOBUF
    return ExportTraceServiceResponse.FromString(answer.content)


def post_json(server: LiveServer, key: str, document: dict[str, Any]) -> dict[str, Any]:
    answer = post(server, key, json.dumps(document).encode(), JSON)
    assert answer.status_code == 200, (answer.status_code, answer.content)
    assert answer.headers["content-type"] == JSON
    out: dict[str, Any] = answer.json()
    return out


def claimed_with_trace(
    endpoint_id: UUID, trace: bytes | None = None, queue: str = "q", max_attempts: int = 5
) -> Any:
    """A todo on ``queue``, claimed by the endpoint with ``trace`` as its attempt's trace."""
    lifecycle.create(endpoint_id, queue=queue, max_attempts=max_attempts)
    claim = lifecycle.claim_next(endpoint_id, [queue], owner="endpoint:agent", trace_id=trace)
    assert claim is not None
    return claim
