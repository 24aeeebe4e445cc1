"""Turn an OTLP/HTTP request body into an ``ExportTraceServiceRequest`` (the upstream types).

Pure: bytes in, a message out, or ``Refused`` with the HTTP status the receiver answers.

- ``Content-Type`` picks the encoding: ``application/x-protobuf`` (binary) or
  ``application/json`` (OTLP/JSON); anything else is 415.
- ``Content-Encoding`` may be ``gzip`` or ``deflate`` (the Python exporter offers both; deflate
  is the zlib format, or raw deflate from senders that read the name literally). Decompression
  stops at ``cap + 1`` bytes of output, so a body that inflates past the cap is 413 after
  ``cap + 1`` bytes of work: a gzip bomb costs nothing. A gzip body may hold at most
  ``GZIP_MEMBERS_MAX`` members (exporters send one): each member's remainder is copied by zlib,
  so a body of many tiny members would cost time quadratic in its size. Any other encoding
  is 415.
- OTLP/JSON writes trace and span ids as hex, but protobuf's JSON mapping reads ``bytes`` as
  base64, and a 32-character hex string *is* valid base64 (it decodes, silently, to 24 wrong
  bytes). So a pre-pass rewrites ``traceId``, ``spanId`` and ``parentSpanId`` from hex to base64
  before ``json_format.ParseDict``. An id that is not 32 (trace) or 16 (span) hex digits is
  replaced by one byte, which the translator rejects as an invalid span: the rest of the batch
  still lands. Span events and links are dropped here (nothing stores them), which also spares
  their ids the same trap. Enum values may be integers or names, 64-bit integers strings or
  numbers, and unknown fields are ignored, as the OTLP/JSON rules ask of receivers.
- A body that does not decode is 400.
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
CONTENT_TYPES = (PROTOBUF, JSON)
_ENCODINGS = ("", "identity", "gzip", "x-gzip", "deflate")
GZIP_MEMBERS_MAX = 16
_HEX = {32: re.compile(r"[0-9a-fA-F]{32}"), 16: re.compile(r"[0-9a-fA-F]{16}")}
# A one-byte id: any length but 16 or 8 makes the translator count the span invalid.
_BAD_ID = base64.b64encode(b"\x00").decode()
_ID_FIELDS = {
    "traceId": 32,
    "trace_id": 32,
    "spanId": 16,
    "span_id": 16,
    "parentSpanId": 16,
    "parent_span_id": 16,
}
_DROPPED_FIELDS = ("events", "links")
_RESOURCE_SPANS = ("resourceSpans", "resource_spans")
_SCOPE_SPANS = ("scopeSpans", "scope_spans")
# A JSON escape of a surrogate: only a body with one can decode to a lone surrogate.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class Refused(Exception):
    """The request cannot be decoded; ``status`` is the HTTP answer (400, 413 or 415)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def media_type(content_type: str | None) -> str:
    """The media type of a Content-Type header, lower-case, parameters dropped."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def decode(
    body: bytes, content_type: str | None, content_encoding: str | None, cap: int
) -> ExportTraceServiceRequest:
    """The request ``body`` as a message; ``Refused`` when it cannot be one."""
    kind = media_type(content_type)
    if kind not in CONTENT_TYPES:
        raise Refused(415, f"Content-Type must be {PROTOBUF} or {JSON}")
    raw = decompress(body, content_encoding, cap)
    if kind == PROTOBUF:
        return _from_protobuf(raw)
    return _from_json(raw)


def decompress(body: bytes, content_encoding: str | None, cap: int) -> bytes:
    """``body`` decoded per ``Content-Encoding``, never more than ``cap`` bytes of it."""
    encoding = (content_encoding or "").strip().lower()
    if encoding not in _ENCODINGS:
        raise Refused(415, "Content-Encoding must be gzip, deflate or none")
    if encoding in ("", "identity"):
        if len(body) > cap:
            raise Refused(413, f"the body is over the {cap}-byte limit")
        return body
    if encoding in ("gzip", "x-gzip"):
        return _inflate(body, zlib.MAX_WBITS | 16, cap)
    try:
        return _inflate(body, zlib.MAX_WBITS, cap)
    except Refused as refused:
        if refused.status != 400:
            raise
        return _inflate(body, -zlib.MAX_WBITS, cap)


def _inflate(data: bytes, wbits: int, cap: int) -> bytes:
    """Inflate every member of ``data`` (gzip allows several), stopping past ``cap`` bytes."""
    out = bytearray()
    members = 0
    try:
        while True:
            members += 1
            if members > GZIP_MEMBERS_MAX:
                raise Refused(400, f"the gzip body has more than {GZIP_MEMBERS_MAX} members")
            inflater = zlib.decompressobj(wbits)
            # max_length is at least 1 here (len(out) <= cap), and 0 would mean "no limit".
            out += inflater.decompress(data, cap + 1 - len(out))
            if len(out) > cap:
                raise Refused(413, f"the decompressed body is over the {cap}-byte limit")
            if not inflater.eof:
                raise Refused(400, "the compressed body is truncated")
            data = inflater.unused_data
            if not data or wbits < 0:
                return bytes(out)
    except zlib.error:
        raise Refused(400, "the body is not validly compressed") from None


def _from_protobuf(raw: bytes) -> ExportTraceServiceRequest:
    message = ExportTraceServiceRequest()
    try:
        message.ParseFromString(raw)
    except (DecodeError, RecursionError, ValueError):
        raise Refused(400, "the body is not an ExportTraceServiceRequest (protobuf)") from None
    return message


def _from_json(raw: bytes) -> ExportTraceServiceRequest:
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        raise Refused(400, "the body is not JSON") from None
    if not isinstance(document, dict):
        raise Refused(400, "the body must be a JSON object (an ExportTraceServiceRequest)")
    if _SURROGATE_ESCAPE.search(raw):
        # A lone surrogate as a key or an enum's name makes upb's lookup raise SystemError:
        # refuse any, as protobuf's own parser refuses one in a string field.
        try:
            json.dumps(document, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            raise Refused(400, "the body holds a lone surrogate, which is not Unicode") from None
        except RecursionError:
            raise Refused(400, "the body is nested too deeply") from None
    rewrite_ids(document)
    message = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError, ValueError, TypeError):
        raise Refused(400, "the body is not an ExportTraceServiceRequest (OTLP/JSON)") from None
    return message


def _items(parent: dict[str, Any], names: tuple[str, ...]) -> list[Any]:
    for name in names:
        value = parent.get(name)
        if isinstance(value, list):
            return value
    return []


def rewrite_ids(document: dict[str, Any]) -> None:
    """Rewrite the hex span and trace ids of an OTLP/JSON document to base64, in place.

    Shapes other than the expected ones are left alone for ``ParseDict`` to refuse.
    """
    for resource_spans in _items(document, _RESOURCE_SPANS):
        if not isinstance(resource_spans, dict):
            continue
        for scope_spans in _items(resource_spans, _SCOPE_SPANS):
            if not isinstance(scope_spans, dict):
                continue
            for span in _items(scope_spans, ("spans",)):
                if isinstance(span, dict):
                    _rewrite_span(span)


def _rewrite_span(span: dict[str, Any]) -> None:
    for field in _DROPPED_FIELDS:
        span.pop(field, None)
    for field, digits in _ID_FIELDS.items():
        value = span.get(field)
        if not isinstance(value, str) or value == "":
            continue  # absent or empty (a root's parent): nothing to rewrite
        if _HEX[digits].fullmatch(value):
            span[field] = base64.b64encode(bytes.fromhex(value)).decode()
        else:
            span[field] = _BAD_ID
