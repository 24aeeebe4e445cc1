"""The bad-input corpus: hostile values and bodies for every surface, and what each must answer.

One corpus, two users. ``tests/test_bad_input.py`` sends all of it to one server (in process
and over HTTP) and checks every answer; ``bench/soak.py`` sends a piece of it at random moments
while processes die and the database restarts, and checks the same answers there. Plain values
and bytes: it imports nothing of the product, so the soak can import it before Django is set up.
Every request it makes fits the default body cap (``SWITCHBOARD_MAX_BODY_BYTES``, 1 MB, the
soak's); the tests' servers cap MCP at 64 KB, so the long strings go to the tools in process.

The answers it names, by surface:

- webhooks (``POST /hooks/{slug}``): a JSON 4xx naming the refusal, written ``"400 invalid_json"``;
- MCP tools: the tool error ``invalid``, or, for an argument the tool accepts, the answer of the
  same call without it (``TOOL_ARGS`` name no todo and an empty queue: ``not_found``, ``ok``);
- MCP resources: the JSON-RPC error ``-32602``; MCP request bodies: a 400 with a JSON-RPC error,
  ``-32700`` for what no JSON parser reads, ``-32600`` for JSON that is not one request;
- OTLP (``POST /otlp/{slug}/v1/traces``): ``"400"`` (a Status; nothing stored), or ``"200"``:
  the span stored with what a row cannot hold taken out (a NUL, a number that is not finite), as
  the translator treats any span (docs/guides/agent-activity.md).
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

DEEP = 10_000

# --- values ----------------------------------------------------------------------------------

# Hostile strings: NUL, a lone surrogate, control characters, a newline, a long string.
NUL = "a\x00b"
SURROGATE = "a\ud800b"
CONTROL = "a\x01\x1b[31mb"
NEWLINE = "a\nb"
LONG = "x" * 100_000
HOSTILE_STRINGS = [NUL, SURROGATE, CONTROL, NEWLINE, LONG, ""]

# Hostile JSON bodies, as the bytes a sender puts on the wire.
HOSTILE_JSON = {
    "huge number": b'{"n": 1e400}',
    "NaN": b'{"n": NaN}',
    "Infinity": b'{"n": Infinity}',
    "-Infinity": b'{"n": -Infinity}',
    "lone surrogate": b'{"s": "\\ud800"}',
    "lone surrogate key": b'{"\\udfff": 1}',
    "NUL": b'{"s": "\\u0000"}',
    "nested 10,000 levels": b"[" * DEEP + b"]" * DEEP,
    "nested 65 levels": b"[" * 65 + b"]" * 65,
    "invalid UTF-8": b'{"s": "\xff\xfe"}',
    "control characters": b'{"s": "\x01"}',
    "not JSON": b"{",
}
# Those no JSON parser reads (Python's stops at its recursion limit); the rest parse, to a value
# that is refused.
UNPARSABLE = frozenset({"nested 10,000 levels", "invalid UTF-8", "control characters", "not JSON"})

# --- webhooks --------------------------------------------------------------------------------

HOOK_SLUGS = ["s%00", "s%00x", "%ED%A0%80", "%FF", "a" * 5_000, "s%0Ax", "s%01"]
HOOK_FORM_FIELDS = [101, 1_001, 5_000]  # a form body with this many fields


# What ``POST /hooks/{slug}`` answers each of HOSTILE_JSON: signed, it is read and refused;
# unsigned, it is refused unread (and recorded without its payload).
HOOK_SIGNED_EXPECTED = "400 invalid_json"
HOOK_UNSIGNED_EXPECTED = "401 bad_signature"
HOOK_SLUG_EXPECTED = "404 unknown_source"
HOOK_FORM_EXPECTED = "400 invalid_json"  # signed or not: too many fields is refused first


def form_body(fields: int) -> bytes:
    return "&".join(f"f{i}=x" for i in range(fields)).encode()


# (header, value) for a Standard Webhooks source: each answered by a JSON 202, 400 or 401.
STANDARD_HEADERS = [
    ("webhook-id", NUL),
    ("webhook-id", "m" * 300),
    ("webhook-id", CONTROL),
    ("webhook-timestamp", "1e10"),
    ("webhook-timestamp", "-1"),
    ("webhook-timestamp", "9" * 40),
    ("webhook-timestamp", "\uff11\uff12\uff13"),  # full-width digits: str.isdigit says yes
    ("webhook-timestamp", NUL),
    ("webhook-signature", "v1,"),
    ("webhook-signature", "v1,===="),
    ("webhook-signature", "v1," + "A" * 100_000),
    ("webhook-signature", "v1," + NUL),
    ("webhook-signature", "," * 1000),
]

# --- MCP -------------------------------------------------------------------------------------

# Each tool's arguments that name no todo (``td_x``) and an empty queue (``q``), so no hostile
# argument a tool accepts can change anything.
TOOL_ARGS: dict[str, dict[str, Any]] = {
    "list_todos": {},
    "get_todo": {"id": "td_x"},
    "claim_next": {"queue": "q"},
    "claim": {"id": "td_x"},
    "heartbeat": {"id": "td_x"},
    "complete": {"id": "td_x"},
    "fail": {"id": "td_x"},
    "release": {"id": "td_x"},
}
# What each tool answers TOOL_ARGS: a page of nothing, an empty claim, or no such todo.
TOOL_BASE = {tool: "not_found" for tool in TOOL_ARGS} | {"list_todos": "ok", "claim_next": "ok"}
# Every argument of every tool, with the values it gets besides its own type.
TOOL_FIELDS: dict[str, tuple[str, ...]] = {
    "list_todos": ("queue", "state", "cursor", "limit"),
    "get_todo": ("id", "attempts_limit"),
    "claim_next": ("queue", "queues", "claimant", "lease_ttl_seconds", "traceparent"),
    "claim": ("id", "claimant", "lease_ttl_seconds", "require_fence", "traceparent"),
    "heartbeat": ("id", "lease_ttl_seconds", "lease_token", "note"),
    "complete": ("id", "result", "summary", "artifact", "lease_token"),
    "fail": ("id", "result", "summary", "artifact", "retryable", "retry_after_seconds"),
    "release": ("id", "summary", "lease_token"),
}
WRONG_TYPES: list[Any] = [None, 1, -1, 1.5, True, [], {}, ["x"], {"a": 1}, *HOSTILE_STRINGS]
CASES = [
    (tool, field, value)
    for tool, fields in TOOL_FIELDS.items()
    for field in fields
    for value in WRONG_TYPES
]

# The values of WRONG_TYPES each argument accepts (docs/guides/agents.md, the tools' input
# schemas); every other value is refused as ``invalid``. Null counts as absent: accepted but
# where the argument is needed (an id; claim_next's queue, given no queues).
_NEEDED = {(tool, "id") for tool, args in TOOL_ARGS.items() if "id" in args}
_NEEDED.add(("claim_next", "queue"))
_AN_ID = (CONTROL, NEWLINE)  # a string an id or a queue might be: looked up, matching nothing
_FREE_TEXT = (CONTROL, NEWLINE, LONG, "")  # control characters stripped, cut to its cap
_NOTE = (NEWLINE, LONG, "")  # newlines kept, other control characters refused
_COUNT = (1,)  # an integer in range
_JSON = tuple(v for v in WRONG_TYPES if v is not None and v not in (NUL, SURROGATE))
ACCEPTS: dict[tuple[str, str], tuple[Any, ...]] = {
    ("list_todos", "queue"): _AN_ID,
    ("list_todos", "limit"): _COUNT,
    ("get_todo", "id"): _AN_ID,
    ("get_todo", "attempts_limit"): _COUNT,
    ("claim_next", "claimant"): _FREE_TEXT,
    ("claim", "id"): _AN_ID,
    ("claim", "claimant"): _FREE_TEXT,
    ("claim", "require_fence"): (True,),
    ("heartbeat", "id"): _AN_ID,
    ("heartbeat", "note"): _NOTE,
    ("complete", "id"): _AN_ID,
    ("complete", "result"): _JSON,
    ("complete", "summary"): _FREE_TEXT,
    ("fail", "id"): _AN_ID,
    ("fail", "result"): _JSON,
    ("fail", "summary"): _FREE_TEXT,
    ("fail", "retryable"): (True,),
    ("fail", "retry_after_seconds"): _COUNT,
    ("release", "id"): _AN_ID,
    ("release", "summary"): _FREE_TEXT,
}


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: ``True`` is not ``1``, ``1`` is not ``1.0``."""
    return type(a) is type(b) and a == b


def tool_expected(tool: str, field: str, value: Any) -> str:
    """What ``tool`` answers ``{**TOOL_ARGS[tool], field: value}``: ``invalid``, or TOOL_BASE's."""
    accepted = ACCEPTS.get((tool, field), ())
    if value is None and (tool, field) in _NEEDED:
        return "invalid"
    if value is None or any(_same(value, ok) for ok in accepted):
        return TOOL_BASE[tool]
    return "invalid"


def _cursor(*values: Any) -> str:
    raw = json.dumps(list(values)).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# Cursors that decode, naming ids no todo has and PostgreSQL could not compare. list_todos
# refuses each as ``invalid``; the Board's lists start from the top.
HOSTILE_CURSORS = [_cursor("2025-01-01T00:00:00+00:00", i) for i in (NUL, SURROGATE, "x" * 9_000)]
CURSOR_EXPECTED = "invalid"

# Results the store could not hold, nor a claim answer carry back out.
HOSTILE_RESULTS = {
    "nested 65 levels": json.loads("[" * 65 + "]" * 65),
    "a NUL": {"s": NUL},
    "a lone surrogate": {"s": SURROGATE},
    "a lone surrogate key": {SURROGATE: 1},
}
# A report (complete or fail) on a held claim with one of these is ``invalid``, and the claim
# is still held.
HOSTILE_REPORTS: list[tuple[str, Any]] = [
    ("summary", NUL),
    ("summary", SURROGATE),
    *(("result", v) for v in HOSTILE_RESULTS.values()),
]

# resources/read: each is the JSON-RPC error -32602 (resource not found).
URIS = [
    "switchboard://todos/td_%00x",
    "switchboard://todos/td_\x00x",
    "switchboard://todos/td_\ud800",
    "switchboard://todos/td_%ED%A0%80",
    "switchboard://todos/td_%FF",
    "switchboard://queues/q%00",
    "switchboard://queues/q\nINFO forged line",
    "switchboard://queues/" + "q" * 10_000,
    "switchboard://queues/%0A",
    "switchboard://nothing/x",
    "other://todos/x",
]
RESOURCE_EXPECTED = "-32602"


# The 2026-07-28 era's request envelope, for requests written by hand (the SDK client cannot
# encode a lone surrogate: its JSON is UTF-8).
MCP_PROTOCOL = "2026-07-28"
MCP_META = {
    "io.modelcontextprotocol/protocolVersion": MCP_PROTOCOL,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def mcp_headers(method: str, name: str) -> dict[str, str]:
    """The routing headers of a hand-written request (``Mcp-Name``: the tool's name)."""
    return {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MCP_PROTOCOL,
        "Mcp-Method": method,
        "Mcp-Name": name,
    }


def mcp_body_expected(name: str) -> str:
    """What ``POST /mcp/{slug}`` answers with ``HOSTILE_JSON[name]`` as the whole body."""
    return "400 -32700" if name in UNPARSABLE else "400 -32600"


def mcp_argument_body(name: str) -> bytes:
    """A ``tools/call`` of ``complete`` on no todo, its ``result`` the hostile body ``name``."""
    return (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": '
        + json.dumps(MCP_META).encode()
        + b', "name": "complete", "arguments": {"id": "td_x", "result": '
        + HOSTILE_JSON[name]
        + b"}}}"
    )


def mcp_argument_expected(name: str) -> str:
    """What ``mcp_argument_body(name)`` gets: a parse error, or the tool error ``invalid``."""
    return "400 -32700" if name in UNPARSABLE else "invalid"


def tool_call_body(tool: str, arguments: dict[str, Any]) -> bytes:
    """A ``tools/call`` request, a lone surrogate written as JSON's escape of it."""
    params = {"_meta": MCP_META, "name": tool, "arguments": arguments}
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    return json.dumps(request).encode()


def encodable(value: Any) -> bool:
    """Whether ``value`` can be sent as UTF-8 JSON (it holds no lone surrogate)."""
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


def rpc_outcome(status: int, content_type: str, body: bytes) -> str:
    """How an answer of ``POST /mcp/{slug}`` reads in this corpus: ``"400 -32700"`` (a JSON-RPC
    error, with its HTTP status unless 200), ``"invalid"`` (a tool error's code), ``"ok"``."""
    text = body.decode(errors="replace")
    if content_type.startswith("text/event-stream"):  # the message is the last data line
        data = [line[5:] for line in text.splitlines() if line.startswith("data:")]
        text = data[-1] if data else ""
    try:
        message = json.loads(text)
        if "error" in message:
            code = str(message["error"]["code"])
            return code if status == 200 else f"{status} {code}"
        result = message["result"]
        if result.get("isError"):
            return str(json.loads(result["content"][0]["text"])["error"]["code"])
    except (ValueError, KeyError, IndexError, TypeError):
        return f"{status} unreadable"
    return "ok" if status == 200 else f"{status} unreadable"


def hook_outcome(status: int, body: bytes) -> str:
    """How an answer of ``POST /hooks/{slug}`` reads in this corpus: ``"400 invalid_json"``."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return f"{status} unreadable"
    return f"{status} {error}" if error else str(status)


# --- OTLP ------------------------------------------------------------------------------------

# OTLP/JSON: each hostile value of HOSTILE_JSON where a receiver reads it, in one span that is
# otherwise well formed (an unknown field is ignored, so ``{"n": 1e400}`` alone would be an
# empty export). Each is the span object's members after its ids and times.
_ATTR = b'"name": "corpus", "attributes": [{"key": "k", "value": %s}]'
OTLP_JSON: dict[str, tuple[bytes, str]] = {
    "huge number": (_ATTR % b'{"doubleValue": 1e400}', "400"),
    "NaN": (_ATTR % b'{"doubleValue": NaN}', "400"),
    "Infinity": (_ATTR % b'{"doubleValue": Infinity}', "400"),
    "-Infinity": (_ATTR % b'{"doubleValue": -Infinity}', "400"),
    "lone surrogate": (b'"name": "a\\ud800b"', "400"),
    "lone surrogate key": (b'"name": "corpus", "\\udfff": 1', "400"),
    "NUL": (b'"name": "a\\u0000b"', "200"),
    "nested 10,000 levels": (_ATTR % (b"[" * DEEP + b"]" * DEEP), "400"),
    "nested 65 levels": (
        _ATTR % (b'{"arrayValue": {"values": [' * 65 + b'{"stringValue": "x"}' + b"]}}" * 65),
        "400",
    ),
    "invalid UTF-8": (b'"name": "a\xff\xfeb"', "400"),
    "control characters": (b'"name": "a\x01b"', "400"),
    "not JSON": (b'"name": "corpus", "attributes": [{', "400"),
}


def otlp_json(name: str, trace: bytes, span: bytes, start_ns: int) -> bytes:
    """The OTLP/JSON export of OTLP_JSON[name]'s one span, on ``trace`` (the claim's)."""
    head = (
        f'{{"traceId": "{trace.hex()}", "spanId": "{span.hex()}", "kind": 1,'
        f' "startTimeUnixNano": "{start_ns}", "endTimeUnixNano": "{start_ns + 1_000_000}", '
    ).encode()
    return (
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [' + head + OTLP_JSON[name][0] + b"}]}]}]}"
    )


# OTLP protobuf: the same hostile values as the binary encoding carries them (a lone surrogate
# as its UTF-8-like bytes, which are not UTF-8; a huge number as a double, infinite). A NUL is
# taken out of the name, a number that is not finite dropped, and the span stored.
OTLP_PROTOBUF: dict[str, str] = {
    "huge number": "200",
    "NaN": "200",
    "lone surrogate": "400",
    "NUL": "200",
    "nested 10,000 levels": "400",
    "invalid UTF-8": "400",
    "control characters": "200",
    "not protobuf": "400",
}


def otlp_outcome(status: int, rejected: int) -> str:
    """How an OTLP answer reads in this corpus: its status, and the spans a 200 refused."""
    return f"200 rejected {rejected}" if status == 200 and rejected else str(status)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _fixed64(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 1) + payload


def _any_double(x: float) -> bytes:
    return _fixed64(4, struct.pack("<d", x))  # AnyValue.double_value


def _nested(depth: int) -> bytes:
    """An AnyValue of arrays in arrays ``depth`` deep around one string."""
    value = _field(1, b"x")  # AnyValue.string_value
    for _ in range(depth):
        value = _field(5, _field(1, value))  # AnyValue.array_value, ArrayValue.values
    return value


def otlp_protobuf(name: str, trace: bytes, span: bytes, start_ns: int) -> bytes:
    """The protobuf export of OTLP_PROTOBUF[name]'s one span, on ``trace``, hand-encoded (no
    library writes a string that is not UTF-8, nor nests past its own depth limit)."""
    if name == "not protobuf":
        return b"\xff\x00 not protobuf"
    names = {
        "lone surrogate": b"a\xed\xa0\x80b",
        "NUL": b"a\x00b",
        "invalid UTF-8": b"a\xff\xfeb",
        "control characters": b"a\x01b",
    }
    value = {
        "huge number": _any_double(float("inf")),
        "NaN": _any_double(float("nan")),
        "nested 10,000 levels": _nested(DEEP),
    }.get(name, _field(1, b"x"))
    attribute = _field(1, b"k") + _field(2, value)  # KeyValue.key, KeyValue.value
    end_ns = start_ns + 1_000_000
    one = (
        _field(1, trace)  # Span.trace_id
        + _field(2, span)  # span_id
        + _field(5, names.get(name, b"corpus"))  # name
        + b"\x30\x01"  # kind (field 6, a varint): internal
        + _fixed64(7, struct.pack("<Q", start_ns))  # start_time_unix_nano
        + _fixed64(8, struct.pack("<Q", end_ns))  # end_time_unix_nano
        + _field(9, attribute)  # attributes
    )
    # ExportTraceServiceRequest.resource_spans, ResourceSpans.scope_spans, ScopeSpans.spans
    return _field(1, _field(2, _field(2, one)))


# --- the Board -------------------------------------------------------------------------------

BOARD_QUERY_VALUES = ["%00", "a%00b", "%ED%A0%80", "%FF%FE", "%0A%0D", "x" * 5_000, "%01"]
