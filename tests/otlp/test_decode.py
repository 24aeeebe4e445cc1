"""Decoding request bodies (otlp/decode.py): encodings, compression, the hex pre-pass. No DB."""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from typing import Any

import pytest

from otlp.decode import JSON, PROTOBUF, Refused, decode, decompress, rewrite_ids
from tests.otlp.helpers import SpanSpec, request, request_json, span_id, trace_id

CAP = 1 << 20


def _refused(status: int, *args: Any) -> str:
    with pytest.raises(Refused) as caught:
        decode(*args)
    assert caught.value.status == status
    return caught.value.message


def test_protobuf_and_json_decode_to_the_same_message() -> None:
    specs = [SpanSpec(trace_id(), attributes={"n": 3, "s": "x", "b": True, "f": 0.5})]
    specs.append(SpanSpec(specs[0].trace, parent=specs[0].span, kind=3, status=2))

    from_protobuf = decode(request(specs).SerializeToString(), PROTOBUF, None, CAP)
    from_json = decode(json.dumps(request_json(specs)).encode(), JSON, None, CAP)

    assert from_protobuf == from_json


def test_hex_ids_are_rewritten_and_upper_case_hex_is_accepted() -> None:
    trace, span = trace_id(), span_id()
    document = request_json([SpanSpec(trace, span=span)])
    document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = trace.hex().upper()

    message = decode(json.dumps(document).encode(), "application/json; charset=utf-8", None, CAP)

    decoded = message.resource_spans[0].scope_spans[0].spans[0]
    assert (decoded.trace_id, decoded.span_id, decoded.parent_span_id) == (trace, span, b"")


@pytest.mark.parametrize(
    "bad", ["abc", "zz" * 16, "ab" * 12, "ab" * 17, base64.b64encode(b"x" * 16).decode()]
)
def test_an_id_of_the_wrong_length_or_not_hex_becomes_invalid_not_a_silent_24_bytes(
    bad: str,
) -> None:
    span = {"traceId": bad, "spanId": "ab" * 8, "parentSpanId": bad, "links": [{"traceId": bad}]}
    document = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}

    rewrite_ids(document)

    assert base64.b64decode(span["traceId"]) == b"\x00"
    assert base64.b64decode(span["parentSpanId"]) == b"\x00"
    assert base64.b64decode(span["spanId"]) == bytes.fromhex("ab" * 8)
    assert "links" not in span  # nothing stores links; their ids never reach the parser


def test_enums_as_names_or_integers_and_int64_as_strings_or_numbers() -> None:
    spec = SpanSpec(trace_id())
    as_names = request_json([spec])
    raw = as_names["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    raw["kind"] = "SPAN_KIND_CLIENT"
    raw["status"] = {"code": "STATUS_CODE_ERROR"}
    raw["startTimeUnixNano"] = spec.start_ns  # a number, not a string
    as_ints = request_json([spec])
    as_ints["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(kind=3, status={"code": 2})

    one = decode(json.dumps(as_names).encode(), JSON, None, CAP)
    two = decode(json.dumps(as_ints).encode(), JSON, None, CAP)

    assert one == two
    assert one.resource_spans[0].scope_spans[0].spans[0].kind == 3


def test_unknown_fields_and_unknown_enum_names_are_ignored() -> None:
    document = request_json([SpanSpec(trace_id())])
    document["somethingNew"] = {"x": 1}
    document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["kind"] = "SPAN_KIND_FUTURE"

    message = decode(json.dumps(document).encode(), JSON, None, CAP)

    assert message.resource_spans[0].scope_spans[0].spans[0].kind == 0


@pytest.mark.parametrize(
    "content_type", [None, "", "text/plain", "application/protobuf", "application/jsonx"]
)
def test_other_content_types_are_415(content_type: str | None) -> None:
    _refused(415, b"", content_type, None, CAP)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"\xff\xff\xff", PROTOBUF),
        (b"{", JSON),
        (b"[1, 2]", JSON),
        (b'{"resourceSpans": 5}', JSON),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": 5}]}]}]}', JSON),
        (b"[" * 100_000, JSON),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "a\\ud800"}]}]}]}', JSON),
        # A lone surrogate in a key or an enum's name: upb's lookup of it raised SystemError.
        (b'{"\\udfff": 1}', JSON),
        (b'{"resourceSpans": [{"\\ud800": 1}]}', JSON),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"kind": "\\ud800"}]}]}]}', JSON),
    ],
)
def test_an_undecodable_body_is_400(body: bytes, content_type: str) -> None:
    _refused(400, body, content_type, None, CAP)


def test_gzip_and_deflate_in_both_its_spellings_decompress() -> None:
    body = request([SpanSpec(trace_id())]).SerializeToString()
    raw_deflate = zlib.compressobj(wbits=-15)
    raw = raw_deflate.compress(body) + raw_deflate.flush()

    assert decompress(gzip.compress(body), "gzip", CAP) == body
    assert decompress(gzip.compress(body[:5]) + gzip.compress(body[5:]), "gzip", CAP) == body
    assert decompress(zlib.compress(body), "deflate", CAP) == body
    assert decompress(raw, "Deflate", CAP) == body
    assert decompress(body, "identity", CAP) == body


def test_a_body_that_inflates_past_the_cap_is_413() -> None:
    bomb = gzip.compress(b"\0" * (CAP * 16))

    with pytest.raises(Refused) as caught:
        decompress(bomb, "gzip", CAP)

    assert caught.value.status == 413


def test_exactly_the_cap_passes_and_one_byte_more_does_not() -> None:
    assert len(decompress(gzip.compress(b"a" * CAP), "gzip", CAP)) == CAP
    with pytest.raises(Refused):
        decompress(gzip.compress(b"a" * (CAP + 1)), "gzip", CAP)
    with pytest.raises(Refused):
        decompress(b"a" * (CAP + 1), None, CAP)


@pytest.mark.parametrize("encoding", ["br", "gzip, gzip", "compress", "zstd"])
def test_other_encodings_are_415(encoding: str) -> None:
    with pytest.raises(Refused) as caught:
        decompress(b"x", encoding, CAP)
    assert caught.value.status == 415


@pytest.mark.parametrize(
    "body",
    [b"not gzip", gzip.compress(b"x" * 100, mtime=0)[:-12], gzip.compress(b"x", mtime=0) + b"junk"],
    ids=["not gzip", "cut short", "trailing junk"],
)
def test_broken_compression_is_400(body: bytes) -> None:
    with pytest.raises(Refused) as caught:
        decompress(body, "gzip", CAP)
    assert caught.value.status == 400


def test_a_gzip_body_of_many_members_is_refused_in_linear_time() -> None:
    """Each member's remainder is copied by zlib: 50,000 empty members (1 MB) took seconds."""
    import time

    from otlp.decode import GZIP_MEMBERS_MAX

    member = gzip.compress(b"")
    body = gzip.compress(b"{}")
    assert decompress(body + member * (GZIP_MEMBERS_MAX - 1), "gzip", CAP) == b"{}"
    started = time.monotonic()
    with pytest.raises(Refused) as refused:
        decompress(member * 50_000, "gzip", 10 * 1024 * 1024)
    assert refused.value.status == 400 and "members" in refused.value.message
    assert time.monotonic() - started < 1.0
