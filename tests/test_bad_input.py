"""A corpus of hostile input against every surface: none of it may answer 5xx, HTML on an API,
or an ``internal`` MCP tool error, and none of it may change state before it is refused.

The surfaces: ``POST /hooks/{slug}``, every MCP tool and resource (through the server's own
handlers, in process), the Board's pages that take a parameter and the admin's lists and change
pages. Each test names the answer the corpus must get, so a fix's regression test is here.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import socket
import time
from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest
from django.db import DatabaseError
from django.test import Client
from mcp.shared.exceptions import MCPError

from mcp_server import server
from mcp_server.verbs import owner_of
from switchboard.lib import jsonlimits
from tests.base import Personas
from tests.factories import RuleFactory, SourceFactory
from tests.live import LiveServer
from tests.reach import claimed, new_todo
from todos import lifecycle
from todos.intake.routing import sign, sign_standard
from todos.models import Event, Todo

SECRET = "corpus-secret"
DEEP = 10_000

# Hostile strings: NUL, a lone surrogate, control characters, a newline, a long string.
NUL = "a\x00b"
SURROGATE = "a\ud800b"
CONTROL = "a\x01\x1b[31mb"
HOSTILE_STRINGS = [NUL, SURROGATE, CONTROL, "a\nb", "x" * 100_000, ""]

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


def assert_json_answer(response: Any, *allowed: int) -> dict[str, Any]:
    assert response.status_code in allowed, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json")
    assert "Retry-After" not in response
    body = response.json()
    assert isinstance(body, dict)
    return body


def assert_page(response: Any) -> None:
    """A Board or admin answer: anything but a server error."""
    assert response.status_code < 500, (response.status_code, response.content[:300])


# --- the shared checker ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"n": float("inf")}, "finite"),
        ({"n": float("nan")}, "finite"),
        ({"s": SURROGATE}, "surrogate"),
        ({SURROGATE: 1}, "surrogate"),
        ({"s": NUL}, "NUL"),
        ([NUL], "NUL"),
        (json.loads("[" * 65 + "]" * 65), "nested"),
    ],
)
def test_the_json_checker_names_what_jsonb_or_mcp_could_not_carry(value: Any, reason: str):
    problem = jsonlimits.problem(value)
    assert problem is not None and reason in problem


def test_the_json_checker_accepts_json_at_the_depth_limit_and_text_that_only_looks_like_nul():
    assert jsonlimits.problem(json.loads("[" * 64 + "]" * 64)) is None
    assert jsonlimits.problem({"s": "\\u0000", "n": 1.5, "b": True, "z": None}) is None


def test_the_json_checker_walks_10000_levels_without_recursion():
    value: Any = []
    for _ in range(DEEP):
        value = [value]
    assert "nested" in (jsonlimits.problem(value) or "")


# --- webhooks --------------------------------------------------------------------------------


@pytest.fixture
def source(personas: Personas) -> Any:
    source = SourceFactory(owner=personas.alice, slug="corpus", secret=SECRET)
    RuleFactory(source=source, endpoint=personas.endpoint_a, name="all", queue="q", match={})
    return source


def deliver(client: Client, body: bytes, *, slug: str = "corpus", **kw: Any) -> Any:
    content_type = kw.pop("content_type", "application/json")
    return client.post(
        f"/hooks/{slug}",
        data=body,
        content_type=content_type,
        headers={"X-Signature-256": sign(SECRET, body), **kw},
    )


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(HOSTILE_JSON))
def test_a_hostile_json_body_is_a_400_with_a_reason_and_creates_no_todo(
    client: Client, source: Any, name: str
):
    body = assert_json_answer(deliver(client, HOSTILE_JSON[name]), 400)
    assert body["error"] == "invalid_json"
    assert body["message"]
    assert not Todo.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(HOSTILE_JSON))
def test_a_hostile_json_body_with_a_bad_signature_is_a_401_recorded_without_its_payload(
    client: Client, source: Any, name: str
):
    response = client.post(
        "/hooks/corpus", data=HOSTILE_JSON[name], content_type="application/json"
    )
    body = assert_json_answer(response, 401)
    event = Event.objects.get(id=body["event_id"])
    assert event.payload is None
    assert event.body_size == len(HOSTILE_JSON[name])
    assert event.body_sha256 == hashlib.sha256(HOSTILE_JSON[name]).hexdigest()
    # At most 256 bytes of it, escaped: no NUL, no raw control character, no lone surrogate.
    prefix = event.body_prefix
    assert len(prefix.encode("utf-8", "surrogatepass")) <= 4 * 256
    assert not jsonlimits.text_problem(prefix)
    assert not any(ch < " " and ch not in "\n\t" for ch in prefix)


@pytest.mark.django_db
def test_json_at_the_depth_limit_is_accepted(client: Client, source: Any):
    assert_json_answer(deliver(client, b'{"a":' * 63 + b"1" + b"}" * 63), 202)


@pytest.mark.django_db
@pytest.mark.parametrize("fields", [101, 1_001, 5_000])
def test_a_form_body_with_too_many_fields_is_a_400_before_anything_else(
    client: Client, source: Any, fields: int
):
    body = "&".join(f"f{i}=x" for i in range(fields)).encode()
    response = deliver(client, body, content_type="application/x-www-form-urlencoded")
    assert assert_json_answer(response, 400)["error"] == "invalid_json"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "slug", ["s%00", "s%00x", "%ED%A0%80", "%FF", "a" * 5_000, "s%0Ax", "s%01"]
)
def test_a_hostile_source_slug_is_a_json_404(client: Client, source: Any, slug: str):
    response = client.post(f"/hooks/{slug}", data=b"{}", content_type="application/json")
    assert assert_json_answer(response, 404)["error"] == "unknown_source"


@pytest.mark.django_db
@pytest.mark.parametrize(("value", "status"), [("d\x01", 202), ("d" * 300, 400)])
def test_a_hostile_delivery_id_is_a_json_answer(
    client: Client, source: Any, value: str, status: int
):
    response = deliver(client, b"{}", **{"X-GitHub-Delivery": value})
    assert_json_answer(response, status)


@pytest.fixture
def standard_source(personas: Personas) -> Any:
    source = SourceFactory(
        owner=personas.alice, slug="corpus-sw", secret=STANDARD_SECRET, scheme="standard-webhooks"
    )
    RuleFactory(source=source, endpoint=personas.endpoint_a, name="all", queue="q", match={})
    return source


STANDARD_SECRET = "whsec_" + base64.b64encode(b"corpus" * 6).decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("header", "value"),
    [
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
    ],
)
def test_hostile_standard_webhooks_headers_are_a_json_answer(
    client: Client, standard_source: Any, header: str, value: str
):
    now = int(time.time())
    headers = {
        "webhook-id": "msg_1",
        "webhook-timestamp": str(now),
        "webhook-signature": sign_standard(STANDARD_SECRET, "msg_1", now, b"{}"),
    }
    headers[header] = value
    if header != "webhook-signature":  # sign what is sent, so the value itself is tested
        try:
            stamp = int(headers["webhook-timestamp"])
        except ValueError:
            stamp = now
        headers["webhook-signature"] = sign_standard(
            STANDARD_SECRET, headers["webhook-id"], stamp, b"{}"
        )
    response = client.post(
        "/hooks/corpus-sw", data=b"{}", content_type="application/json", headers=headers
    )
    assert_json_answer(response, 202, 400, 401)
    assert Todo.objects.count() <= 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/hooks/corpus", "/mcp/nope", "/otlp/nope/v1/traces", "/login/"])
def test_an_over_cap_declared_length_is_a_json_413_before_any_body(
    live_daphne: LiveServer, path: str
):
    with socket.create_connection(("127.0.0.1", live_daphne.port), timeout=10) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {300 * 1_048_576}\r\n\r\n".encode()
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"Content-Type: application/json" in head
    # Each surface's own shape: the hooks' and the Board's JSON, MCP's JSON-RPC, OTLP's Status.
    assert "too large" in body.decode() or "over the" in json.loads(body)["message"]


# --- MCP, in process through the server's handlers --------------------------------------------


def _ctx(endpoint: Any) -> Any:
    return SimpleNamespace(
        request=SimpleNamespace(scope={server.SCOPE_ENDPOINT: endpoint}), params={}
    )


def call_tool(endpoint: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = types.CallToolRequestParams(name=name, arguments=arguments)
    result = asyncio.run(server.call_tool(_ctx(endpoint), params))
    if result.is_error:  # a tool error is its text block alone (docs/guides/agents.md)
        assert result.structured_content is None
        out = json.loads(result.content[0].text)  # type: ignore[union-attr]
    else:
        out = result.structured_content
    assert isinstance(out, dict)
    # The answer must be encodable: what cannot be sent is an -32603 after the fact.
    json.dumps(out, allow_nan=False)
    return out


def tool_error_code(out: dict[str, Any]) -> str | None:
    return out["error"]["code"] if "error" in out else None


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


def _cursor(*values: Any) -> str:
    raw = json.dumps(list(values)).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# Cursors that decode, naming ids no todo has and PostgreSQL could not compare.
HOSTILE_CURSORS = [_cursor("2025-01-01T00:00:00+00:00", i) for i in (NUL, SURROGATE, "x" * 9_000)]


@pytest.mark.django_db(transaction=True)
def test_no_argument_of_any_tool_is_an_internal_error(personas: Personas):
    endpoint = personas.endpoint_a
    failures = []
    cursors = [("list_todos", "cursor", c) for c in HOSTILE_CURSORS]
    for tool, field, value in [*CASES, *cursors]:
        out = call_tool(endpoint, tool, {**TOOL_ARGS[tool], field: value})
        if tool_error_code(out) == "internal":
            failures.append((tool, field, repr(value)[:40], out["error"]["message"]))
    assert failures == []


HOSTILE_RESULTS = {
    "nested 65 levels": json.loads("[" * 65 + "]" * 65),
    "a NUL": {"s": NUL},
    "a lone surrogate": {"s": SURROGATE},
    "a lone surrogate key": {SURROGATE: 1},
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("tool", ["complete", "fail"])
@pytest.mark.parametrize(
    ("field", "value"),
    [("summary", NUL), ("summary", SURROGATE), *(("result", v) for v in HOSTILE_RESULTS.values())],
)
def test_a_report_the_store_cannot_hold_is_invalid_and_leaves_the_claim_held(
    personas: Personas, tool: str, field: str, value: Any
):
    held = claimed(personas.endpoint_a.id, "q", owner=owner_of(personas.endpoint_a))
    todo_id = held.todo.id
    out = call_tool(personas.endpoint_a, tool, {"id": todo_id, field: value})
    assert tool_error_code(out) == "invalid", out
    assert Todo.objects.get(id=todo_id).state == "claimed"


@pytest.mark.django_db(transaction=True)
def test_claim_next_answers_a_claim_that_can_be_encoded(personas: Personas):
    new_todo(personas.endpoint_a.id, "q", payload=json.loads("[" * 60 + "]" * 60))
    out = call_tool(personas.endpoint_a, "claim_next", {"queue": "q"})
    assert tool_error_code(out) is None, out
    assert out["todo"]["payload"] is not None


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(HOSTILE_RESULTS))
def test_a_todo_whose_claim_could_not_be_encoded_is_refused_at_creation(
    personas: Personas, name: str
):
    with pytest.raises(lifecycle.InvalidInput):
        new_todo(personas.endpoint_a.id, "q", payload=HOSTILE_RESULTS[name])
    assert not Todo.objects.exists()


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


@pytest.mark.django_db(transaction=True)
def test_a_hostile_resource_uri_is_resource_not_found(personas: Personas):
    for uri in URIS:
        params = SimpleNamespace(uri=uri)
        with pytest.raises(MCPError) as caught:
            asyncio.run(server.read_resource(_ctx(personas.endpoint_a), params))  # type: ignore[arg-type]
        assert caught.value.error.code == types.INVALID_PARAMS, (uri, caught.value.error)


@pytest.mark.django_db(transaction=True)
def test_a_newline_in_a_resource_uri_cannot_forge_a_log_line(
    personas: Personas, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
):
    def refuse(*_: Any) -> Any:
        raise DatabaseError("down")

    monkeypatch.setattr(server.resources, "read", refuse)
    params = SimpleNamespace(uri="switchboard://queues/q\nERROR forged")
    with pytest.raises(MCPError):
        asyncio.run(server.read_resource(_ctx(personas.endpoint_a), params))  # type: ignore[arg-type]
    (record,) = [r for r in caplog.records if r.name == server.logger.name]
    assert "\n" not in record.getMessage()
    assert "\\nERROR forged" in record.getMessage()


# --- the Board --------------------------------------------------------------------------------


@pytest.fixture
def alice_client(personas: Personas) -> Client:
    client = Client()
    client.force_login(personas.alice)
    return client


BOARD_QUERY_VALUES = ["%00", "a%00b", "%ED%A0%80", "%FF%FE", "%0A%0D", "x" * 5_000, "%01"]


@pytest.mark.django_db
@pytest.mark.parametrize("value", BOARD_QUERY_VALUES)
def test_board_pages_answer_hostile_parameters_without_a_server_error(
    alice_client: Client, personas: Personas, value: str
):
    new_todo(personas.endpoint_a.id, "q")
    for url in [
        f"/?queue={value}",
        f"/?endpoint={value}",
        f"/?state={value}",
        f"/?after={value}",
        f"/?{value}={value}",
        f"/activity/?endpoint={value}",
        f"/activity/?queue={value}",
        f"/activity/?kind={value}",
        f"/activity/?outcome={value}",
        f"/activity/?after={value}",
        f"/overview/?endpoint={value}&queue={value}",
        f"/overview/?endpoint=agent-a&queue={value}",
        f"/todos/td_{value}",
        f"/todos/{value}",
        "/sources/",
        f"/endpoints/?q={value}",
        f"/sources/?q={value}",
        f"/bulk/retry?queue={value}",
        f"/bulk/cancel?endpoint={value}&dead=1",
        f"/bulk/{value}",
        f"/queues/pause?endpoint=agent-a&queue={value}",
        f"/queues/resume?endpoint={value}&queue=q",
    ]:
        assert_page(alice_client.get(url))
        assert_page(alice_client.get(url, headers={"HX-Request": "true"}))
    for action in ("claim", "complete", "fail", "release", "retry", "cancel", value):
        assert_page(alice_client.post(f"/todos/td_{value}/{action}", {"summary": "x"}))
    for action in ("retry", "cancel"):
        form = {"seen_at": value, "counted": value, "reason": value}
        assert_page(alice_client.post(f"/bulk/{action}?queue={value}", form))
        form["seen_at"] = "2026-01-01T00:00:00+00:00"
        assert_page(alice_client.post(f"/bulk/{action}?queue={value}&state={value}", form))
    for action in ("pause", "resume"):
        assert_page(alice_client.post(f"/queues/{action}?endpoint=agent-a&queue={value}"))
    assert Todo.objects.get(queue="q").state == "pending"  # no bulk action reached it


@pytest.mark.django_db
@pytest.mark.parametrize("value", [NUL, CONTROL, "a\nb", "x" * 100_000, "", "Ops", "new"])
def test_team_pages_refuse_hostile_names_and_change_nothing(
    alice_client: Client, personas: Personas, value: str
):
    from switchboard import teams
    from switchboard.models import Team, TeamMember

    teams.create_team("ops", personas.alice)
    before = set(TeamMember.objects.values_list("team_id", "human_id", "role"))
    assert_page(alice_client.post("/teams/", {"name": value}))
    for action in ("add", "remove", "role"):
        assert_page(alice_client.post(f"/teams/ops/{action}", {"username": value, "role": value}))
    assert_page(alice_client.post("/endpoints/agent-a/move", {"team": value}))
    assert_page(alice_client.get(f"/teams/{value[:64]}"))
    assert set(Team.objects.values_list("name", flat=True)) == {"ops"}
    assert set(TeamMember.objects.values_list("team_id", "human_id", "role")) == before
    personas.endpoint_a.refresh_from_db()
    assert personas.endpoint_a.owner_id == personas.alice.pk


@pytest.mark.django_db
def test_board_cursors_naming_hostile_ids_start_from_the_top(alice_client: Client):
    for cursor in HOSTILE_CURSORS:
        assert_page(alice_client.get(f"/?after={cursor}"))
        assert_page(alice_client.get(f"/activity/?after={cursor}"))


@pytest.mark.django_db
# A lone surrogate cannot be sent in a form: its bytes are invalid UTF-8 (in the page corpus).
@pytest.mark.parametrize("value", [NUL, CONTROL, "x" * 100_000])
def test_board_actions_refuse_hostile_text_and_keep_the_todo(
    alice_client: Client, personas: Personas, value: str
):
    todo = new_todo(personas.endpoint_a.id, "q")
    assert_page(alice_client.post(f"/todos/{todo.id}/claim", {"claimant": value}))
    for action in ("complete", "fail", "release", "cancel"):
        assert_page(alice_client.post(f"/todos/{todo.id}/{action}", {"summary": value}))


@pytest.mark.django_db
@pytest.mark.parametrize("value", [NUL, "[" * 100 + "]" * 100, '{"a": NaN}', '{"a": 1e400}'])
def test_the_rule_tester_and_rule_form_refuse_hostile_json(
    alice_client: Client, source: Any, value: str
):
    assert_page(alice_client.post("/sources/corpus/test", {"payload": value, "headers": value}))
    assert_page(
        alice_client.post(
            "/sources/corpus/rules/new",
            {"name": value, "queue": value, "match": value, "endpoint": value},
        )
    )


@pytest.mark.django_db
def test_a_board_form_with_too_many_fields_is_not_a_server_error(alice_client: Client):
    body = "&".join(f"f{i}=x" for i in range(1_500))
    response = alice_client.post(
        "/endpoints/new", data=body, content_type="application/x-www-form-urlencoded"
    )
    assert_page(response)


# --- the admin --------------------------------------------------------------------------------

ADMIN_LISTS = [
    "/admin/todos/todo/",
    "/admin/todos/source/",
    "/admin/todos/rule/",
    "/admin/todos/event/",
    "/admin/switchboard/endpoint/",
    "/admin/switchboard/endpointkey/",
    "/admin/switchboard/human/",
    "/admin/switchboard/setting/",
    "/admin/switchboard/team/",
    "/admin/switchboard/teammember/",
]


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["%00", "a%00b", "%ED%A0%80", "%FF", "x" * 3_000])
def test_admin_lists_and_change_pages_answer_hostile_queries_without_a_server_error(
    admin_client: Client, value: str
):
    for base in ADMIN_LISTS:
        for query in (
            f"q={value}",
            f"queue={value}",
            f"queue__exact={value}",
            f"state__exact={value}",
            f"endpoint__id__exact={value}",
            f"owner__id__exact={value}",
            f"source__id__exact={value}",
            f"dead={value}",
            f"revoked={value}",
            f"o={value}",
            f"p={value}",
        ):
            assert_page(admin_client.get(f"{base}?{query}"))
        assert_page(admin_client.get(f"{base}{value}/change/"))
    for sub in ("attempts", "activity", "spans"):
        assert_page(admin_client.get(f"/admin/todos/todo/{sub}/?q={value}&todo__id__exact={value}"))
