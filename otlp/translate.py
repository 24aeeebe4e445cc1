"""From decoded OTLP spans to ``todo_spans`` rows: validate, categorise, allow-list, cut, mask.

Pure: no I/O. Two steps, with binding (``otlp.bind``) between them so that only spans that bind
pay for translation:

1. ``collect`` walks ResourceSpans → ScopeSpans → Span once and returns a ``Candidate`` per valid
   span, with what binding needs: the trace id, the ``switchboard.todo.id`` and
   ``switchboard.attempt.seq`` attributes (the span's own, else its resource's) and the start
   time. A span is invalid (counted, never stored) when its trace id is not 16 bytes or is all
   zero, its span id not 8 bytes or all zero, its parent id neither empty nor 8 bytes, its start
   time unset, or its end before its start.
2. ``translate`` builds the row of a bound candidate: kind and status as the names the table
   stores, the category by the GenAI conventions (``category``), the tool label, the service
   name, and ``attributes``: only the keys in ``ATTRIBUTES`` (plus ``CONTENT`` when the
   ``otlp_capture_content`` setting is 1), each string cut (1 KiB; contents 4 KiB), then masked
   (``switchboard.lib.redact.mask``, which needs its input cut first), then cut again (a marker
   can lengthen a text). The whole object stays under the table's 16 KiB CHECK: keys are
   dropped, contents first, until it fits. ``truncated`` says that something was cut or dropped.

Names, status messages, tool labels and service names are cut to their columns' byte caps and
masked too. NUL characters, which PostgreSQL text cannot hold, are removed, and so are lone
surrogates (OTLP/JSON can spell one as an escape).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otlp import usage as usage_rules
from otlp.models import (
    ATTRIBUTES_MAX_BYTES,
    NAME_MAX_BYTES,
    SERVICE_NAME_MAX_BYTES,
    SPAN_ID_BYTES,
    STATUS_MESSAGE_MAX_BYTES,
    TOOL_MAX_BYTES,
    TRACE_ID_BYTES,
)
from otlp.prices import PriceBook
from switchboard.lib.redact import mask
from switchboard.lib.text import whole_number

TODO_ATTRIBUTE = "switchboard.todo.id"
SEQ_ATTRIBUTE = "switchboard.attempt.seq"
VALUE_MAX_BYTES = 1024
CONTENT_MAX_BYTES = 4096
LIST_MAX_ITEMS = 32
# Shorter than every shape switchboard.lib.redact recognises ("passwd=x", "a://b:c@"): such a
# text is stored as it is, without a call to mask.
MASK_MIN_CHARS = 8
# jsonb prints a number in full ("1e300" as 301 digits): floats this large or this small are
# kept as text, so the size measured here is the size the CHECK measures.
_FLOAT_MAX = 1e15
_FLOAT_MIN = 1e-6

KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
STATUSES = {0: "unset", 1: "ok", 2: "error"}
CATEGORIES = ("llm", "tool", "agent", "retrieval", "http", "db", "other")

# Attributes kept in todo_spans.attributes, in the order they are kept when space runs out.
ATTRIBUTES = (
    TODO_ATTRIBUTE,
    SEQ_ATTRIBUTE,
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.system",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.reasoning.output_tokens",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.usage.completion_tokens",
    "gen_ai.response.finish_reasons",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.type",
    "gen_ai.agent.name",
    "gen_ai.agent.id",
    "gen_ai.workflow.name",
    "gen_ai.conversation.id",
    "mcp.method.name",
    "mcp.resource.uri",
    "openinference.span.kind",
    "llm.model_name",
    "llm.provider",
    "llm.token_count.prompt",
    "llm.token_count.completion",
    "llm.token_count.total",
    "tool.name",
    "traceloop.span.kind",
    "traceloop.entity.name",
    "db.system.name",
    "db.system",
    "db.operation.name",
    "db.collection.name",
    "http.request.method",
    "http.method",
    "http.response.status_code",
    "http.status_code",
    "url.full",
    "server.address",
    "server.port",
    "rpc.system",
    "rpc.service",
    "rpc.method",
    "error.type",
)
# Tool inputs and outputs and message contents: kept only when otlp_capture_content is 1, as
# text (a structured value is kept as its JSON), cut to 4 KiB and masked. The GenAI conventions
# make them opt-in for the same reason: they hold whatever the model read and wrote.
CONTENT = (
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
    "gen_ai.prompt",
    "gen_ai.completion",
    "input.value",
    "output.value",
)
_CONTENT_KEYS = frozenset(CONTENT)
# Each kept name's place: the attributes, then (captured) the contents.
_ATTRIBUTE_ORDER = {key: i for i, key in enumerate(ATTRIBUTES)}
_CAPTURED_ORDER = {key: i for i, key in enumerate((*ATTRIBUTES, *CONTENT))}

# --- the category rules (first hit wins) -----------------------------------------------------

_OPERATIONS = {
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "embeddings": "llm",
    "execute_tool": "tool",
    "invoke_agent": "agent",
    "create_agent": "agent",
    "invoke_workflow": "agent",
    "plan": "agent",
    "retrieval": "retrieval",
    "search_memory": "retrieval",
    "create_memory": "db",
    "update_memory": "db",
    "upsert_memory": "db",
    "delete_memory": "db",
}
_OPENINFERENCE = {
    "LLM": "llm",
    "EMBEDDING": "llm",
    "TOOL": "tool",
    "AGENT": "agent",
    "CHAIN": "agent",
    "RETRIEVER": "retrieval",
    "RERANKER": "retrieval",
}
_TRACELOOP = {"tool": "tool", "agent": "agent", "workflow": "agent", "task": "other"}
_MODEL_KEYS = ("gen_ai.request.model", "gen_ai.provider.name", "gen_ai.system", "llm.model_name")
_TOOL_KEYS = ("gen_ai.tool.name", "tool.name")
_NAME_PREFIXES = (
    ("claude_code.llm_request", "llm"),
    ("claude_code.tool", "tool"),
    ("claude_code.interaction", "agent"),
)
_DB_KEYS = ("db.system.name", "db.system", "db.query.text", "db.operation.name")
_HTTP_KEYS = ("http.request.method", "http.method", "url.full", "rpc.system.name", "rpc.system")
# Every attribute the category and tool rules read.
_RULE_KEYS = frozenset(
    (
        "gen_ai.operation.name",
        "mcp.method.name",
        "openinference.span.kind",
        "traceloop.span.kind",
        *_MODEL_KEYS,
        *_TOOL_KEYS,
        *_DB_KEYS,
        *_HTTP_KEYS,
    )
)


def category(name: str, attributes: Mapping[str, Any]) -> str:
    """The span's category (``CATEGORIES``) from its attributes and name; the first rule wins.

    1. ``gen_ai.operation.name``; 2. ``mcp.method.name`` (tools/call is a tool, other MCP
    methods are other); 3. ``openinference.span.kind``; 4. ``traceloop.span.kind``; 5. a model
    or provider attribute (llm), a tool name (tool), Claude Code's span names; 6. database
    attributes; 7. HTTP and RPC attributes; 8. other.
    """
    operation = attributes.get("gen_ai.operation.name")
    if isinstance(operation, str):
        if operation in _OPERATIONS:
            return _OPERATIONS[operation]
        if operation.endswith("_memory_store"):
            return "db"
    method = attributes.get("mcp.method.name")
    if isinstance(method, str):
        return "tool" if method == "tools/call" else "other"
    kind = attributes.get("openinference.span.kind")
    if isinstance(kind, str):
        return _OPENINFERENCE.get(kind.upper(), "other")
    kind = attributes.get("traceloop.span.kind")
    if isinstance(kind, str) and kind in _TRACELOOP:
        return _TRACELOOP[kind]
    if any(key in attributes for key in _MODEL_KEYS):
        return "llm"
    if any(key in attributes for key in _TOOL_KEYS):
        return "tool"
    for prefix, found in _NAME_PREFIXES:
        if name.startswith(prefix):
            return found
    if any(key in attributes for key in _DB_KEYS):
        return "db"
    if any(key in attributes for key in _HTTP_KEYS):
        return "http"
    return "other"


def tool_label(name: str, attributes: Mapping[str, Any]) -> str | None:
    """``gen_ai.tool.name``, else ``tool.name``, else the target of an MCP span's name."""
    for key in _TOOL_KEYS:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    method = attributes.get("mcp.method.name")
    if isinstance(method, str) and name.startswith(method + " "):
        return name[len(method) + 1 :] or None
    return None


# --- text hygiene ------------------------------------------------------------------------------


def clean(text: str, max_bytes: int) -> tuple[str, bool]:
    """``text`` without NULs or lone surrogates, cut to ``max_bytes`` of UTF-8, then masked and
    cut again; and whether the first cut dropped anything."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    try:
        encoded = text.encode()
    except UnicodeEncodeError:
        encoded = text.encode("utf-8", "replace")  # lone surrogates become '?'
        text = encoded.decode()
    cut = len(encoded) > max_bytes
    if cut:
        text = encoded[:max_bytes].decode("utf-8", "ignore")
    if len(text) < MASK_MIN_CHARS:
        return text, cut
    masked, changed = mask(text)
    if changed:
        encoded = masked.encode()
        if len(encoded) > max_bytes:
            masked = encoded[:max_bytes].decode("utf-8", "ignore")
    return masked, cut


# --- attribute values --------------------------------------------------------------------------


class _Cuts:
    """Whether anything was cut while converting one span (a flag passed down the recursion)."""

    __slots__ = ("any",)

    def __init__(self) -> None:
        self.any = False


def _scalar(value: AnyValue) -> Any:
    """A scalar AnyValue as Python, unconverted strings included (no cut, no mask)."""
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which == "int_value":
        return value.int_value
    if which == "bool_value":
        return value.bool_value
    if which == "double_value":
        return value.double_value
    return None


def _plain(value: AnyValue, cuts: _Cuts, max_bytes: int, depth: int = 0) -> Any:
    """An AnyValue as JSON-able Python, strings cleaned, lists and maps bounded."""
    which = value.WhichOneof("value")
    if which == "string_value":
        text, cut = clean(value.string_value, max_bytes)
        cuts.any |= cut
        return text
    if which == "bool_value":
        return value.bool_value
    if which == "int_value":
        return value.int_value
    if which == "double_value":
        number = value.double_value
        if not math.isfinite(number) or (
            number != 0 and not _FLOAT_MIN <= abs(number) < _FLOAT_MAX
        ):
            return repr(number)
        return number
    if which == "bytes_value":
        text, cut = clean(base64.b64encode(value.bytes_value).decode(), max_bytes)
        cuts.any |= cut
        return text
    if depth >= 2:
        cuts.any = True
        return None
    if which == "array_value":
        items = value.array_value.values
        cuts.any |= len(items) > LIST_MAX_ITEMS
        return [_plain(v, cuts, max_bytes, depth + 1) for v in items[:LIST_MAX_ITEMS]]
    if which == "kvlist_value":
        pairs = value.kvlist_value.values
        cuts.any |= len(pairs) > LIST_MAX_ITEMS
        out: dict[str, Any] = {}
        for kv in pairs[:LIST_MAX_ITEMS]:
            key, cut = clean(kv.key, 128)
            cuts.any |= cut
            out[key] = _plain(kv.value, cuts, max_bytes, depth + 1)
        return out
    return None


def _raw_json(value: AnyValue, depth: int = 0) -> Any:
    """An AnyValue as JSON-able Python, uncut (for a content value kept as its JSON text)."""
    which = value.WhichOneof("value")
    if which == "array_value" and depth < 8:
        return [_raw_json(v, depth + 1) for v in value.array_value.values[:256]]
    if which == "kvlist_value" and depth < 8:
        return {kv.key: _raw_json(kv.value, depth + 1) for kv in value.kvlist_value.values[:256]}
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    if which == "double_value" and not math.isfinite(value.double_value):
        return repr(value.double_value)
    return _scalar(value)


def _content(value: AnyValue, cuts: _Cuts) -> str:
    """A content attribute as text: a string as is, anything else as its JSON; cut, masked."""
    if value.WhichOneof("value") == "string_value":
        text = value.string_value
    else:
        # Build at most a little more than the cap: a huge structure is cut anyway.
        text = json.dumps(_raw_json(value), ensure_ascii=False)
    cleaned, cut = clean(text, CONTENT_MAX_BYTES)
    cuts.any |= cut
    return cleaned


# Made once: json.dumps with arguments builds a new encoder on every call (a microsecond a span).
_AS_JSONB_PRINTS = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _json_size(value: Any) -> int:
    """Bytes of ``value`` as jsonb prints it (``", "`` and ``": "`` separators, UTF-8)."""
    return len(_AS_JSONB_PRINTS(value).encode())


# --- step 1: collect ---------------------------------------------------------------------------


def _attribute_map(attributes: Any) -> dict[str, AnyValue]:
    return {kv.key: kv.value for kv in attributes}


def _todo_hint(attributes: Mapping[str, AnyValue]) -> str | None:
    value = attributes.get(TODO_ATTRIBUTE)
    if value is None or value.WhichOneof("value") != "string_value":
        return None
    text = value.string_value.strip()
    return text if 0 < len(text) <= 64 else None


def _seq_hint(attributes: Mapping[str, AnyValue]) -> int | None:
    value = attributes.get(SEQ_ATTRIBUTE)
    if value is None:
        return None
    which = value.WhichOneof("value")
    seq: Any = None
    if which == "int_value":
        seq = value.int_value
    elif which == "string_value":
        seq = whole_number(value.string_value.strip(), 10)
    return seq if isinstance(seq, int) and 0 < seq < 2**31 else None


@dataclass(frozen=True, slots=True)
class Resource:
    """What a span inherits from its ResourceSpans: its service and the binding attributes."""

    service_name: str | None
    todo_hint: str | None
    seq_hint: int | None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A valid span and what binding it needs."""

    span: Span
    attributes: dict[str, AnyValue]
    resource: Resource
    trace_id: bytes
    todo_hint: str | None
    seq_hint: int | None
    start_ns: int


@dataclass(frozen=True, slots=True)
class Collected:
    candidates: list[Candidate]
    invalid: int

    @property
    def total(self) -> int:
        return len(self.candidates) + self.invalid


def _resource(resource_spans: Any) -> Resource:
    attributes = _attribute_map(resource_spans.resource.attributes)
    service = attributes.get("service.name")
    service_name = None
    if service is not None and service.WhichOneof("value") == "string_value":
        service_name = clean(service.string_value, SERVICE_NAME_MAX_BYTES)[0] or None
    return Resource(service_name, _todo_hint(attributes), _seq_hint(attributes))


def _valid(span: Span) -> bool:
    trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
    return (
        len(trace_id) == TRACE_ID_BYTES
        and any(trace_id)
        and len(span_id) == SPAN_ID_BYTES
        and any(span_id)
        and len(parent) in (0, SPAN_ID_BYTES)
        and span.start_time_unix_nano > 0
        and span.end_time_unix_nano >= span.start_time_unix_nano
    )


def spans(request: ExportTraceServiceRequest) -> Iterator[tuple[Any, Span]]:
    """Every span of the request with its ResourceSpans."""
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield resource_spans, span


def collect(request: ExportTraceServiceRequest) -> Collected:
    """Step 1: the valid spans with their binding hints, and how many were invalid."""
    candidates: list[Candidate] = []
    invalid = 0
    for resource_spans in request.resource_spans:
        resource = _resource(resource_spans)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                if not _valid(span):
                    invalid += 1
                    continue
                attributes = _attribute_map(span.attributes)
                todo_hint = _todo_hint(attributes)
                seq_hint = _seq_hint(attributes)
                if todo_hint is None:
                    todo_hint = resource.todo_hint
                    seq_hint = seq_hint if seq_hint is not None else resource.seq_hint
                candidates.append(
                    Candidate(
                        span,
                        attributes,
                        resource,
                        bytes(span.trace_id),
                        todo_hint,
                        seq_hint,
                        span.start_time_unix_nano,
                    )
                )
    return Collected(candidates, invalid)


# --- step 2: translate -------------------------------------------------------------------------


# Not frozen: one is built per span on the ingest's hot path, and a frozen dataclass sets each
# of its 25 fields through object.__setattr__ (2.5 µs a span more). Nothing changes one after
# translate returns it.
@dataclass(slots=True)
class Row:
    """One ``todo_spans`` row, in the store statement's column order."""

    todo_id: str
    trace_id: bytes
    span_id: bytes
    parent_span_id: bytes | None
    attempt_seq: int | None
    name: str
    kind: str
    category: str
    tool: str | None
    status_code: str
    status_message: str | None
    service_name: str | None
    start_us: int
    end_us: int
    attributes: str  # JSON text
    truncated: bool
    # A model call's usage (otlp/usage.py) and its cost (None: unpriced); all None on every
    # other span. ``usage_refused`` says why usage attributes counted nothing.
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: Decimal | None = None
    usage_refused: str | None = None


def _attributes(
    attributes: Mapping[str, AnyValue], capture_content: bool, cuts: _Cuts
) -> dict[str, Any]:
    """The allow-listed attributes, cleaned, in the allow-lists' order (``_fit`` drops from
    the end). Walks the few the span carries, not the sixty names it might."""
    order = _CAPTURED_ORDER if capture_content else _ATTRIBUTE_ORDER
    present = sorted((order[key], key) for key in attributes if key in order)
    kept: dict[str, Any] = {}
    for _, key in present:
        value = attributes[key]
        if key in _CONTENT_KEYS:
            kept[key] = _content(value, cuts)
        else:
            kept[key] = _plain(value, cuts, VALUE_MAX_BYTES)
    return kept


def _fit(kept: dict[str, Any]) -> tuple[str, bool]:
    """``kept`` under the attributes CHECK, as the compact JSON text stored: contents dropped
    first, then the last keys; and whether any was dropped."""
    text = _COMPACT(kept)
    # jsonb prints a space after each ',' and ':' between items; counting every ',' and ':' in
    # the compact text (those inside strings too) bounds its size from above without a second
    # encoding, and the exact size is needed only when the bound is over the cap.
    size = len(text) if text.isascii() else len(text.encode())
    if size + text.count(",") + text.count(":") <= ATTRIBUTES_MAX_BYTES:
        return text, False
    if _json_size(kept) <= ATTRIBUTES_MAX_BYTES:
        return text, False
    order = [k for k in kept if k in _CONTENT_KEYS][::-1] + [
        k for k in kept if k not in _CONTENT_KEYS
    ][::-1]
    fitted = dict(kept)
    for key in order:
        del fitted[key]
        if _json_size(fitted) <= ATTRIBUTES_MAX_BYTES:
            break
    return _COMPACT(fitted), True


def translate(
    candidate: Candidate,
    todo_id: str,
    attempt_seq: int | None,
    capture_content: bool,
    prices: PriceBook | None = None,
) -> Row:
    """Step 2: the row of a bound span; a model call's usage priced by ``prices`` (none given:
    unpriced)."""
    span = candidate.span
    cuts = _Cuts()
    raw_name = span.name
    name, cut = clean(raw_name, NAME_MAX_BYTES)
    cuts.any |= cut
    # The rules read the values as sent (names of operations and tools, never contents).
    plain = {k: _scalar(v) for k, v in candidate.attributes.items() if k in _RULE_KEYS}
    attributes, dropped = _fit(_attributes(candidate.attributes, capture_content, cuts))
    tool = tool_label(raw_name, plain)
    if tool is not None:
        tool, cut = clean(tool, TOOL_MAX_BYTES)
        cuts.any |= cut
    status_message = None
    if span.status.message:
        status_message, cut = clean(span.status.message, STATUS_MESSAGE_MAX_BYTES)
        cuts.any |= cut
    span_category = category(raw_name, plain)
    usage, refused = usage_rules.extract(raw_name, span_category, candidate.attributes)
    start_us = span.start_time_unix_nano // 1000
    cost = None
    if usage is not None and prices is not None:
        start = dt.datetime.fromtimestamp(start_us // 1_000_000, dt.UTC)
        cost = prices.price(usage, start)
    return Row(
        todo_id=todo_id,
        trace_id=candidate.trace_id,
        span_id=bytes(span.span_id),
        parent_span_id=bytes(span.parent_span_id) if any(span.parent_span_id) else None,
        attempt_seq=attempt_seq,
        name=name,
        kind=KINDS.get(span.kind, "unspecified"),
        category=span_category,
        tool=tool or None,
        status_code=STATUSES.get(span.status.code, "unset"),
        status_message=status_message or None,
        service_name=candidate.resource.service_name,
        start_us=start_us,
        end_us=span.end_time_unix_nano // 1000,
        attributes=attributes,
        truncated=cuts.any or dropped,
        model=None if usage is None else usage.model,
        input_tokens=None if usage is None else usage.input,
        output_tokens=None if usage is None else usage.output,
        cache_read_tokens=None if usage is None else usage.cache_read,
        cache_write_tokens=None if usage is None else usage.cache_write,
        reasoning_tokens=None if usage is None else usage.reasoning,
        cost_usd=cost,
        usage_refused=refused,
    )
