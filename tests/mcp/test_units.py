"""MCP pieces that need no server: traceparent, session ids, Host/Origin, lifespan, the two
argument validators."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from django.test import override_settings
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_server import resources, schemas, sessions
from mcp_server import server as mcp_server
from mcp_server.transport import Refused, check_message, host_allowed, origin_allowed
from switchboard.lib import traceparent

GOOD = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.mark.parametrize(
    "value",
    [
        GOOD,
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff",
        # A future version: its first four fields count, more may follow after a '-'.
        "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-will-bring",
        "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    ],
)
def test_valid_traceparents_parse(value: str) -> None:
    parsed = traceparent.parse(value)
    assert parsed is not None
    assert parsed.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert str(parsed).startswith("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-")


@pytest.mark.parametrize(
    "value",
    [
        None,
        5,
        "",
        GOOD[:-1],
        GOOD + "-",
        GOOD + ".",
        GOOD.upper(),
        "ff" + GOOD[2:],
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.x",
        " " + GOOD,
    ],
)
def test_invalid_traceparents_are_refused(value: Any) -> None:
    assert traceparent.parse(value) is None


def test_the_sampled_flag_is_a_bit_not_the_byte() -> None:
    parsed = traceparent.parse(GOOD[:-2] + "03")
    assert parsed is not None and parsed.sampled


def test_a_session_id_verifies_for_its_endpoint_only() -> None:
    mine, theirs = uuid.uuid4(), uuid.uuid4()
    session = sessions.mint(mine)
    assert session.startswith("sbs_") and session.isascii() and " " not in session
    assert sessions.is_valid(session, mine)
    assert not sessions.is_valid(session, theirs)
    assert not sessions.is_valid(session + "x", mine)
    assert not sessions.is_valid("sbs_" + session[4:].upper(), mine)


def test_session_ids_survive_a_secret_key_rotation_with_fallbacks() -> None:
    endpoint = uuid.uuid4()
    with override_settings(SECRET_KEY="old-key-" * 8):
        session = sessions.mint(endpoint)
    with override_settings(SECRET_KEY="new-key-" * 8, SECRET_KEY_FALLBACKS=["old-key-" * 8]):
        assert sessions.is_valid(session, endpoint)
    with override_settings(SECRET_KEY="new-key-" * 8, SECRET_KEY_FALLBACKS=[]):
        assert not sessions.is_valid(session, endpoint)


@override_settings(ALLOWED_HOSTS=[".example.com", "127.0.0.1"], CSRF_TRUSTED_ORIGINS=[])
def test_host_and_origin_follow_allowed_hosts() -> None:
    assert host_allowed("api.example.com")
    assert host_allowed("example.com:8443")
    assert host_allowed("127.0.0.1:8000")
    assert not host_allowed("evil.com")
    assert not host_allowed(None)
    assert not host_allowed("")
    assert origin_allowed(None, "api.example.com")
    assert origin_allowed("https://app.example.com", "api.example.com")
    assert not origin_allowed("https://evil.com", "api.example.com")
    assert not origin_allowed("null", "api.example.com")
    assert not origin_allowed("file://", "api.example.com")


@override_settings(ALLOWED_HOSTS=["localhost", ".example.com"], CSRF_TRUSTED_ORIGINS=[])
def test_an_origin_on_another_port_than_the_request_is_refused() -> None:
    assert origin_allowed("http://localhost:8000", "localhost:8000")
    assert not origin_allowed("http://localhost:9999", "localhost:8000")
    assert not origin_allowed("http://localhost", "localhost:8000")
    assert not origin_allowed("http://localhost:8000", "localhost")
    # A default port written out, on either side, is the same origin as none.
    assert origin_allowed("https://app.example.com:443", "app.example.com")
    assert origin_allowed("https://app.example.com", "app.example.com:443")
    assert not origin_allowed("http://localhost:99999", "localhost:8000")


@override_settings(ALLOWED_HOSTS=["localhost"], CSRF_TRUSTED_ORIGINS=["http://localhost:9999"])
def test_an_origin_on_another_port_passes_once_trusted() -> None:
    assert origin_allowed("http://localhost:9999", "localhost:8000")


@override_settings(ALLOWED_HOSTS=["*"], CSRF_TRUSTED_ORIGINS=["https://tools.partner.test"])
def test_a_csrf_trusted_origin_is_allowed() -> None:
    assert origin_allowed("https://tools.partner.test", "switchboard.example")


def test_check_message_accepts_requests_notifications_and_responses() -> None:
    assert check_message(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')["id"] == 1
    assert "id" not in check_message(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert check_message(b'{"jsonrpc":"2.0","id":"a","result":{}}')["id"] == "a"
    with pytest.raises(Refused):
        check_message(b'{"jsonrpc":"2.0","id":true,"method":"ping"}')


def test_the_lifespan_starts_and_stops_the_session_manager() -> None:
    # For servers that send lifespan (uvicorn); daphne does not, and the first request starts it.
    runtime = mcp_server.McpRuntime(mcp_server.build_server())
    original = mcp_server.RUNTIME
    mcp_server.RUNTIME = runtime
    sent: list[dict[str, Any]] = []
    inbox = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

    async def receive() -> dict[str, Any]:
        if sent and sent[-1]["type"] == "lifespan.startup.complete":
            assert runtime._task is not None and not runtime._task.done()
        return inbox.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    try:
        asyncio.run(mcp_server.lifespan({"type": "lifespan"}, receive, send))
    finally:
        mcp_server.RUNTIME = original
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert runtime._task is None


# --- the argument validators: jsonschema-rs says "valid" exactly when jsonschema does ---------

# Values around every bound the tools' schemas set (lengths 1, 64, 128, 512, 2048; integers
# 1..500, 10..86400; booleans), in the types JSON can carry, integral floats and bools included.
_EDGES = st.sampled_from(
    [0, 1, 9, 10, 100, 500, 501, 86400, 86401, -1, 2**63, 10.0, 300.0, 1.5, True, False, None]
)
_LENGTHS = st.one_of(
    st.sampled_from([0, 1, 2, 63, 64, 65, 127, 128, 129, 511, 512, 513, 2047, 2048, 2049]),
    st.integers(0, 2100),
)
_TEXT = st.one_of(
    st.text(max_size=3),
    _LENGTHS.map(lambda n: "x" * n),
    _LENGTHS.map(lambda n: "\U0001f600" * n),  # lengths count code points, not UTF-16 units
    st.sampled_from(["td_aaaaaaaaaaaaaaaaaaaa", "ci", "00-" + "1" * 32 + "-" + "2" * 16 + "-01"]),
)
_JSON = st.recursive(
    st.one_of(_EDGES, st.integers(), st.floats(allow_nan=False), _TEXT),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=8,
)


def _arguments(name: str) -> st.SearchStrategy[dict[str, Any]]:
    schema = schemas.INPUT[name]
    keys = st.sampled_from([*schema["properties"], "unknown"])
    return st.dictionaries(keys, _JSON, max_size=len(schema["properties"]) + 1)


def _probes(schema: dict[str, Any]) -> list[Any]:
    """Values at and beside every bound in ``schema`` (and its anyOf branches and items)."""
    found: list[Any] = [None, True, 1, 1.0, 1.5, "", "x", "x" * 3000, [], {}, -(2**70), 2**70]
    for branch in schema.get("anyOf", [schema]):
        for key in ("minLength", "maxLength"):
            if key in branch:
                n = branch[key]
                found += ["x" * (n - 1), "x" * n, "x" * (n + 1), "\U0001f600" * (n + 1)]
        for key in ("minimum", "maximum"):
            if key in branch:
                n = branch[key]
                found += [n - 1, n, n + 1, float(n), float(n + 1), n + 0.5]
        for value in branch.get("enum", ()):
            found += [value, value.upper()]
        if "items" in branch:
            items = _probes(branch["items"])
            found += [[item] for item in items]
            for key in ("minItems", "maxItems"):
                if key in branch:
                    n = branch[key]
                    found += [["q"] * (n - 1), ["q"] * n, ["q"] * (n + 1)]
    return found


@pytest.mark.parametrize("name", sorted(schemas.INPUT))
def test_the_fast_validator_agrees_at_every_bound(name: str) -> None:
    fast, reference = mcp_server._FAST_VALIDATORS[name], mcp_server._VALIDATORS[name]
    schema = schemas.INPUT[name]
    base = {field: "td_aaaaaaaaaaaaaaaaaaaa" for field in schema.get("required", ())}
    checked = 0
    for field, prop in schema["properties"].items():
        for value in _probes(prop):
            arguments = {**base, field: value}
            assert fast.is_valid(arguments) == reference.is_valid(arguments), arguments
            checked += 1
    # At least two probes a property (a bound and past it), whatever the tool's size: the app
    # tools have two properties, the agent's tools many.
    assert fast.is_valid(base) and checked >= 2 * len(schema["properties"])
    assert not fast.is_valid({**base, "unknown": 1})


@pytest.mark.parametrize("name", sorted(schemas.INPUT))
def test_the_fast_validator_agrees_with_jsonschema(name: str) -> None:
    fast, reference = mcp_server._FAST_VALIDATORS[name], mcp_server._VALIDATORS[name]

    @settings(max_examples=300, deadline=None)
    @given(_arguments(name))
    def agree(arguments: dict[str, Any]) -> None:
        assert fast.is_valid(arguments) == reference.is_valid(arguments), arguments

    agree()


def test_a_refused_argument_is_still_named_by_jsonschema() -> None:
    huge = {"queue": "ci", "lease_ttl_seconds": 2**70}
    assert mcp_server._argument_error("claim_next", huge) == (
        "lease_ttl_seconds: 1180591620717411303424 is greater than the maximum of 86400"
    )
    assert mcp_server._argument_error("claim_next", {**huge, "lease_ttl_seconds": 60}) is None


@pytest.mark.parametrize(
    ("uri", "queue"),
    [
        ("switchboard://queues/ci%20jobs", "ci jobs"),
        ("switchboard://queues/caf%C3%A9", "café"),
        # An escape that is not UTF-8 names nothing (it read as U+FFFD, another queue's name).
        ("switchboard://queues/ci%FF", None),
        ("switchboard://queues/%C3", None),
    ],
)
def test_a_queue_uri_names_its_queue_only_when_its_escapes_are_utf8(
    uri: str, queue: str | None
) -> None:
    assert resources.queue_of(uri) == queue
