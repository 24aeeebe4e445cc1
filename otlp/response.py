"""OTLP/HTTP answers, encoded like the request (protobuf or JSON), never HTML.

Success is an ``ExportTraceServiceResponse``: empty when every span was stored, with
``partial_success`` (``rejected_spans`` and a message naming the reasons) when some were not. A
partial success is still 200, and the exporter must not retry it. A refusal is a
``google.rpc.Status`` with the HTTP status the OTLP specification gives it: 400 (bad data, do not
retry), 401, 404, 405, 413, 415, and the retryable 429 and 503 with ``Retry-After``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf import json_format
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from otlp.decode import JSON, PROTOBUF, media_type

# The gRPC code a google.rpc.Status carries for each HTTP status (the OTLP/gRPC mapping).
_GRPC_CODES = {
    400: 3,  # INVALID_ARGUMENT
    401: 16,  # UNAUTHENTICATED
    404: 5,  # NOT_FOUND
    405: 12,  # UNIMPLEMENTED
    408: 4,  # DEADLINE_EXCEEDED: the body did not arrive in time (switchboard/lib/server.py)
    413: 8,  # RESOURCE_EXHAUSTED
    415: 3,  # INVALID_ARGUMENT
    429: 8,  # RESOURCE_EXHAUSTED
    503: 14,  # UNAVAILABLE
}


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    content_type: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def encoding_of(content_type: str | None) -> str:
    """The answer's encoding: JSON for a JSON request (or one whose type is unknown, so a human
    with curl can read it), protobuf for a protobuf request."""
    return PROTOBUF if media_type(content_type) == PROTOBUF else JSON


def success(encoding: str, rejected: int = 0, message: str = "") -> Reply:
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    if encoding == PROTOBUF:
        return Reply(200, PROTOBUF, response.SerializeToString())
    text = json_format.MessageToJson(response, indent=None)
    return Reply(200, JSON, text.encode())


def failure(
    encoding: str, status: int, message: str, headers: dict[str, str] | None = None
) -> Reply:
    body = Status(code=_GRPC_CODES.get(status, 2), message=message)
    if encoding == PROTOBUF:
        return Reply(status, PROTOBUF, body.SerializeToString(), headers or {})
    text = json_format.MessageToJson(body, indent=None)
    return Reply(status, JSON, text.encode(), headers or {})
