"""Stateless ``tools/call`` answered without the SDK's request pipeline (the 2026-07-28 era).

Why: around the handler, the SDK's pipeline cost about 0.9 ms of CPU per claim + complete cycle
(a Starlette request and response, the dispatch context and session objects, an OpenTelemetry
span, pydantic models of the result, dumped and validated again on the way out), a fifth of the
server's CPU per cycle (docs/decisions/0021-mcp-server-cost.md). A stateless-era ``tools/call``
is one JSON-RPC request in and one JSON response out, so ``mcp_server.transport`` hands it here
first, and this answers it as the SDK would, byte for byte:

- **The same checks, mostly the SDK's own functions.** ``Accept`` must admit JSON and no
  routing header may come twice (the rules of the SDK's ``check_accept_headers`` and
  ``find_duplicated_routing_header``, read off the raw headers); the envelope must pass the
  SDK's ladder (``classify_inbound_request``: ``_meta`` keys, ``MCP-Protocol-Version``,
  ``Mcp-Method`` and ``Mcp-Name`` against the body, a served version) and the 2026-07-28
  surface (``validate_client_request``, which checks ``name``, ``arguments`` and ``_meta``'s
  shapes). The transport has already checked the JSON-RPC envelope, the content type and the
  body's size.
- **The same handler.** ``params`` parsed into the handler's model (``CallToolRequestParams``),
  then ``mcp_server.server.answer_call``, which is what the SDK's ``tools/call`` handler runs:
  rate limit, verbs, arguments, one hop to a worker thread, the error mapping.
- **The same answer.** The result object the SDK builds from ``tool_result`` (content, then
  ``isError``, ``resultType: complete``, ``structuredContent`` on a success, the ``serverInfo``
  stamp in ``_meta``), in the JSON-RPC envelope, serialized as the SDK serializes it, with the
  headers its response carries (``content-length``, ``content-type: application/json``).

Everything else goes to the SDK unchanged, before anything is sent: another method, a
notification, the legacy era, a client that accepts only SSE, a request any check refuses (the
SDK then words the refusal), an unknown tool, a tool whose schema declares ``Mcp-Param`` headers
(none does yet: the SDK would compare them), and every request while the SDK's pipeline would do
something this skips: another ``tools/call`` handler, a cache hint, a middleware other than its
OpenTelemetry span, or a tracer provider that would record that span
(``opentelemetry.trace.set_tracer_provider`` or ``OTEL_PYTHON_TRACER_PROVIDER``; without one the
span is a no-op). A handler that raises past ``answer_call``'s own mapping gets the SDK's
internal error. ``SWITCHBOARD_MCP_FAST_PATH=false`` sends every request to the SDK;
``tests/mcp/test_fastpath.py`` sends the same requests both ways and compares the answers.

**Only on the SDK it was proven against.** This module copies the SDK's answer and reads one of
its private modules (``mcp.server._otel``), so a new SDK release may change what "as the SDK
would" means. ``PROVEN_SDK_VERSIONS`` names the releases ``tests/mcp/test_fastpath.py`` passed
on; with any other ``mcp`` or ``mcp-types`` installed the fast path is off (the SDK serves every
request) and a warning says so once (docs/decisions/0025-vendor-boundaries.md).
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
from typing import Any

import mcp_types as types
from django.conf import settings
from mcp.server.runner import modern_error_data
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundModernRoute,
    classify_inbound_request,
)
from mcp_types import methods
from opentelemetry import trace
from pydantic import ValidationError

from mcp_server import schemas, tools
from mcp_server import server as mcp
from switchboard.lib import asgi
from switchboard.lib.asgi import Scope, Send
from switchboard.models import Endpoint

logger = logging.getLogger(__name__)

# The SDK's own middleware, from a private module: on an SDK without it the fast path is off
# (``enabled``), not the server.
_sdk_otel_middleware: type[Any] | None
try:
    from mcp.server._otel import OpenTelemetryMiddleware

    _sdk_otel_middleware = OpenTelemetryMiddleware
except ImportError:  # an unproven SDK: sdk_proven() is False there too
    _sdk_otel_middleware = None

# The releases of the SDK (``mcp`` and ``mcp-types``, released together) whose answers
# tests/mcp/test_fastpath.py compared byte for byte with this module's. Add a release here only
# after that test passes on it.
PROVEN_SDK_VERSIONS = frozenset({"2.3.0"})
_SDK_DISTRIBUTIONS = ("mcp", "mcp-types")


def installed_sdk() -> dict[str, str]:
    """The installed version of each SDK distribution."""
    return {name: importlib.metadata.version(name) for name in _SDK_DISTRIBUTIONS}


_proven: bool | None = None  # decided on first use, once per process


def sdk_proven() -> bool:
    """Whether the installed SDK is one the comparison test proved; warns once when not."""
    global _proven
    if _proven is None:
        unproven = {n: v for n, v in installed_sdk().items() if v not in PROVEN_SDK_VERSIONS}
        if unproven:
            logger.warning(
                "MCP fast path off: the SDK installed (%s) is not one tests/mcp/test_fastpath.py "
                "proved (%s); the SDK answers every request",
                ", ".join(f"{n} {v}" for n, v in sorted(unproven.items())),
                ", ".join(sorted(PROVEN_SDK_VERSIONS)),
            )
        _proven = not unproven
    return _proven


_ROUTING_HEADERS = frozenset(
    name.encode("latin-1")
    for name in (MCP_PROTOCOL_VERSION_HEADER, MCP_METHOD_HEADER, MCP_NAME_HEADER)
)

# The SDK stamps a fresh copy on every result; this one is only ever serialized, never changed.
_SERVER_INFO = {types.SERVER_INFO_META_KEY: mcp.SERVER.server_info_stamp}


def enabled() -> bool:
    """Whether the fast path may answer: the setting is on, the SDK is a proven release, and
    skipping the SDK's pipeline changes nothing (its only middleware is the OpenTelemetry span,
    which no tracer provider records, and ``tools/call`` has no cache hint)."""
    server = mcp.SERVER
    entry = server.get_request_handler("tools/call")
    return (
        settings.SWITCHBOARD_MCP_FAST_PATH
        and sdk_proven()
        and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
        and len(server.middleware) == 1
        and _sdk_otel_middleware is not None
        and type(server.middleware[0]) is _sdk_otel_middleware
        and "tools/call" not in server.cache_hints
        and entry is not None
        and entry.handler is mcp.call_tool
    )


def _accepts_json(scope: Scope) -> bool:
    """The SDK's ``check_accept_headers`` verdict on JSON for the first ``Accept`` header
    (``*/*``, ``application/*`` and ``application/json`` pass), without building a Starlette
    request around the scope."""
    accept = asgi.header(scope, b"accept") or ""
    kinds = [kind.strip().split(";")[0].strip().lower() for kind in accept.split(",")]
    return "*/*" in kinds or "application/json" in kinds or "application/*" in kinds


def _routing_headers(scope: Scope) -> dict[str, str] | None:
    """The routing headers as the SDK reads them, or None when one of them comes twice (the
    SDK refuses that: ``find_duplicated_routing_header``)."""
    found: dict[bytes, str] = {}
    for raw_name, raw_value in scope["headers"]:
        name = bytes(raw_name)  # lower-case: ASGI's rule, which the SDK relies on too
        if name in _ROUTING_HEADERS:
            if name in found:
                return None
            found[name] = bytes(raw_value).decode("latin-1")
    return {name.decode("latin-1"): value for name, value in found.items()}


def wire_result(outcome: mcp.Outcome) -> dict[str, Any]:
    """The result object the SDK's pipeline makes of ``server.tool_result(outcome)`` in the
    2026-07-28 era, keys in its order."""
    out, is_error = outcome
    result: dict[str, Any] = {
        "content": [{"text": mcp.compact_json(out), "type": "text"}],
        "isError": is_error,
        "resultType": "complete",
    }
    if not is_error:
        result["structuredContent"] = out
    result["_meta"] = _SERVER_INFO
    return result


async def answer(
    scope: Scope,
    message: dict[str, Any],
    endpoint: Endpoint,
    retry_after: int | None,
    send: Send,
    key_digest: bytes | None = None,
) -> bool:
    """Answer ``message`` (a checked JSON-RPC message of a modern-era POST) if it is a
    ``tools/call`` this fully understands, and say so; False, with nothing sent, otherwise.

    Preconditions (``mcp_server.transport``): the request is a POST whose ``MCP-Protocol-Version``
    is not a handshake version, authenticated as ``endpoint``, with a JSON body under the cap.
    """
    params = message.get("params")
    if message.get("method") != "tools/call" or "id" not in message or not isinstance(params, dict):
        return False
    name = params.get("name")
    if not isinstance(name, str) or name not in tools.TOOLS:
        return False
    if schemas.input_schema(name) is not None:
        return False
    if not enabled():
        return False
    if not _accepts_json(scope):
        return False
    headers = _routing_headers(scope)
    if headers is None:
        return False
    route = classify_inbound_request(message, headers=headers)
    if not isinstance(route, InboundModernRoute):
        return False
    try:
        # The SDK's two checks of params: the version's wire surface, then the handler's model.
        methods.validate_client_request("tools/call", route.protocol_version, params)
        typed = types.CallToolRequestParams.model_validate(params, by_name=False)
    except (ValidationError, KeyError, ValueError):
        return False

    request_id = message["id"]
    status = 200
    try:
        outcome = await mcp.answer_call(
            mcp.caller_of(endpoint, None, params, retry_after, key_digest),
            typed.name,
            typed.arguments or {},
        )
    except Exception as exc:
        # What the SDK answers when its handler raises (answer_call maps every tool error itself).
        error = modern_error_data(exc)
        status = ERROR_CODE_HTTP_STATUS.get(error.code, 200)
        body: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": error.model_dump(mode="json", by_alias=True, exclude_none=True),
        }
    else:
        body = {"jsonrpc": "2.0", "id": request_id, "result": wire_result(outcome)}
    data = json.dumps(body, separators=(",", ":")).encode()
    headers_out = [
        (b"content-length", str(len(data)).encode()),
        (b"content-type", b"application/json"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers_out})
    await send({"type": "http.response.body", "body": data, "more_body": False})
    return True
