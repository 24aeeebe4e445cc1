"""A corpus of hostile input against every surface: none of it may answer 5xx, HTML on an API,
or an ``internal`` MCP tool error, and none of it may change state before it is refused.

The surfaces: ``POST /hooks/{slug}``, every MCP tool and resource (through the server's own
handlers, in process), the Board's pages that take a parameter and the admin's lists and change
pages. Each test names the answer the corpus must get, so a fix's regression test is here.

The corpus itself is ``bench/badinput.py``, with the answer each piece must get, which the chaos
soak (``bench/soak.py``) expects of the same input under load; the tests at the end send what the
soak sends, over HTTP to one server, and check those answers.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import secrets
import socket
import time
from functools import partial
from types import SimpleNamespace
from typing import Any

import httpx2
import mcp_types as types
import pytest
from django.db import DatabaseError
from django.test import Client
from mcp.shared.exceptions import MCPError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from bench.badinput import (
    BOARD_QUERY_VALUES,
    CASES,
    CONTROL,
    CURSOR_EXPECTED,
    DEEP,
    HOOK_FORM_EXPECTED,
    HOOK_FORM_FIELDS,
    HOOK_SIGNED_EXPECTED,
    HOOK_SLUG_EXPECTED,
    HOOK_SLUGS,
    HOOK_UNSIGNED_EXPECTED,
    HOSTILE_CURSORS,
    HOSTILE_JSON,
    HOSTILE_REPORTS,
    HOSTILE_RESULTS,
    NUL,
    OTLP_JSON,
    OTLP_PROTOBUF,
    STANDARD_HEADERS,
    SURROGATE,
    TOOL_ARGS,
    URIS,
    encodable,
    form_body,
    hook_outcome,
    mcp_argument_body,
    mcp_argument_expected,
    mcp_body_expected,
    mcp_headers,
    otlp_json,
    otlp_outcome,
    otlp_protobuf,
    rpc_outcome,
    tool_call_body,
    tool_expected,
)
from mcp_server import server
from mcp_server.verbs import owner_of
from otlp.models import TodoSpan
from switchboard.lib import jsonlimits
from tests.base import Personas
from tests.factories import RuleFactory, SourceFactory
from tests.live import LiveServer
from tests.otlp.helpers import JSON, PROTOBUF, claimed_with_trace
from tests.reach import claimed, new_todo
from todos import lifecycle
from todos.intake.routing import sign, sign_standard
from todos.models import Event, Todo

SECRET = "corpus-secret"
FORM = "application/x-www-form-urlencoded"


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
    assert body["error"] == "bad_signature"
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
@pytest.mark.parametrize("fields", HOOK_FORM_FIELDS)
def test_a_form_body_with_too_many_fields_is_a_400_before_anything_else(
    client: Client, source: Any, fields: int
):
    response = deliver(client, form_body(fields), content_type="application/x-www-form-urlencoded")
    assert assert_json_answer(response, 400)["error"] == "invalid_json"


@pytest.mark.django_db
@pytest.mark.parametrize("slug", HOOK_SLUGS)
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
@pytest.mark.parametrize(("header", "value"), STANDARD_HEADERS)
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


@pytest.mark.django_db(transaction=True)
def test_every_argument_gets_the_answer_the_corpus_names(personas: Personas):
    # Refused as invalid, or accepted: then the call is TOOL_ARGS' own (no such todo, no claim).
    cases = [(*case, tool_expected(*case)) for case in CASES]
    cases += [("list_todos", "cursor", c, CURSOR_EXPECTED) for c in HOSTILE_CURSORS]
    wrong = []
    for tool, field, value, expected in cases:
        out = call_tool(personas.endpoint_a, tool, {**TOOL_ARGS[tool], field: value})
        if (tool_error_code(out) or "ok") != expected:
            wrong.append((tool, field, repr(value)[:40], expected, out.get("error")))
    assert wrong == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("tool", ["complete", "fail"])
@pytest.mark.parametrize(("field", "value"), HOSTILE_REPORTS)
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


# --- over HTTP, as the chaos soak sends it -------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_over_http_the_hooks_answer_the_corpus_as_it_names_and_create_nothing(
    live_daphne: LiveServer, source: Any
):
    def post(path: str, body: bytes, content_type: str, signed: bool) -> str:
        headers = {"Content-Type": content_type}
        if signed:
            headers["X-Signature-256"] = sign(SECRET, body)
        response = httpx2.post(live_daphne.url(path), content=body, headers=headers, timeout=30)
        return hook_outcome(response.status_code, response.content)

    answers = []
    for name, body in HOSTILE_JSON.items():
        for signed, expected in ((True, HOOK_SIGNED_EXPECTED), (False, HOOK_UNSIGNED_EXPECTED)):
            answers.append((name, signed, post("/hooks/corpus", body, JSON, signed), expected))
    for slug in HOOK_SLUGS:
        answers.append(
            (slug[:20], True, post(f"/hooks/{slug}", b"{}", JSON, True), HOOK_SLUG_EXPECTED)
        )
    for fields in HOOK_FORM_FIELDS:
        outcome = post("/hooks/corpus", form_body(fields), FORM, True)
        answers.append((fields, True, outcome, HOOK_FORM_EXPECTED))
    assert [a for a in answers if a[2] != a[3]] == []
    assert not Todo.objects.exists()  # the source's rule matches everything it accepts


@pytest.mark.django_db(transaction=True)
def test_over_http_mcp_answers_hostile_bodies_and_arguments_as_the_corpus_names(
    live_daphne: LiveServer, personas: Personas
):
    def post(body: bytes, tool: str = "complete") -> str:
        headers = {"Authorization": f"Bearer {personas.key_a}", **mcp_headers("tools/call", tool)}
        url = live_daphne.mcp_url("agent-a")
        response = httpx2.post(url, content=body, headers=headers, timeout=30)
        return rpc_outcome(response.status_code, response.headers["content-type"], response.content)

    answers = []
    for name, body in HOSTILE_JSON.items():
        answers.append((name, "body", post(body), mcp_body_expected(name)))
        answers.append((name, "result", post(mcp_argument_body(name)), mcp_argument_expected(name)))
    # What the SDK's client cannot encode, written by hand.
    for tool, field, value in CASES:
        if not encodable(value):
            body = tool_call_body(tool, {**TOOL_ARGS[tool], field: value})
            answers.append((tool, field, post(body, tool), tool_expected(tool, field, value)))
    assert [a for a in answers if a[2] != a[3]] == []


@pytest.mark.django_db(transaction=True)
def test_over_http_each_hostile_span_gets_the_answer_the_corpus_names(
    live_daphne: LiveServer, personas: Personas
):
    trace = secrets.token_bytes(16)
    claimed_with_trace(personas.endpoint_a.id, trace)
    headers = {"Authorization": f"Bearer {personas.key_a}"}
    answers, kept = [], set()
    for name, expected, content_type, body in [
        *((n, e, JSON, partial(otlp_json, n)) for n, (_, e) in OTLP_JSON.items()),
        *((n, e, PROTOBUF, partial(otlp_protobuf, n)) for n, e in OTLP_PROTOBUF.items()),
    ]:
        span = secrets.token_bytes(8)
        response = httpx2.post(
            live_daphne.url("/otlp/agent-a/v1/traces"),
            content=body(trace, span, time.time_ns()),
            headers={**headers, "Content-Type": content_type},
            timeout=30,
        )
        rejected = 0
        if response.status_code == 200 and content_type == PROTOBUF:
            answer = ExportTraceServiceResponse.FromString(response.content)
            rejected = answer.partial_success.rejected_spans
        elif response.status_code == 200:
            rejected = int(response.json().get("partialSuccess", {}).get("rejectedSpans", 0))
        answers.append((content_type, name, otlp_outcome(response.status_code, rejected), expected))
        if expected == "200":
            kept.add(span)
    assert [a for a in answers if a[2] != a[3]] == []
    stored = TodoSpan.objects.filter(trace_id=trace).values_list("span_id", flat=True)
    assert {bytes(s) for s in stored} == kept  # what was refused left nothing
