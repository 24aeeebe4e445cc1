"""OAuth against a live server with the official MCP SDK's OAuth client (``mcp.client.auth``):
a full sign-in by Dynamic Client Registration and by a Client ID Metadata Document, the consent
step driven over HTTP on the Board, then tools and a claim; and every refusal the resource owes:
another endpoint's OAuth URL, a token without a resource, a key on the OAuth URL, a token on the
key URL (which never mentions OAuth), a revoked connection on its next request, a call outside
the token's scopes (403 ``insufficient_scope``), and A2A with a token issued for it."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from django.utils import timezone
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from oauth2_provider.models import AccessToken, Application

from switchboard import credentials
from switchboard.lib.oauth_scopes import READ, SUBMIT, WORK
from switchboard.models import DRAIN_VERBS, Verb
from tests.factories import EndpointFactory, HumanFactory
from tests.live import LiveServer, run
from tests.mcp.wire import ENVELOPE, TOOLS_LIST, Legacy, modern_headers, tool_call
from tests.oauth.conftest import (
    Consent,
    MemoryStorage,
    MetadataHost,
    board_login,
    provider,
)
from tests.oauth.flow import REDIRECT, form_fields, pkce
from todos import lifecycle
from todos.models import Todo

pytestmark = [pytest.mark.django_db(transaction=True)]


def _operator(username: str, slug: str, verbs: list[str] | None = None) -> Any:
    human = HumanFactory(username=username)
    return human, EndpointFactory(owner=human, slug=slug, verbs=verbs or list(DRAIN_VERBS))


async def _sdk_session(
    url: str, consent: Consent, client_metadata_url: str | None = None
) -> tuple[list[str], Any, MemoryStorage]:
    """Sign in with the SDK's OAuth client, list the tools and claim from queue q."""
    storage = MemoryStorage()
    auth = provider(url, consent, storage, client_metadata_url)
    async with (
        httpx2.AsyncClient(auth=auth, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        tools = [tool.name for tool in (await client.list_tools()).tools]
        claimed = await client.call_tool("claim_next", {"queue": "q"})
    return tools, claimed, storage


def _mcp(server: LiveServer, path: str, token: str, body: Any, method: str) -> httpx2.Response:
    """POST ``body`` on the 2026-07-28 wire, with the Mcp-Name header its method carries (a
    tool's name, a task's id)."""
    params = body.get("params", {})
    name = params.get("name") or params.get("taskId")
    return httpx2.post(
        server.url(path),
        headers=modern_headers(token, method, name),
        content=json.dumps(body).encode(),
        timeout=30,
    )


def test_the_sdk_signs_in_by_registration_then_lists_tools_and_claims(
    oauth_live: LiveServer,
) -> None:
    _human, endpoint = _operator("oa-dcr", "oa-dcr")
    _other_human, other = _operator("oa-dcr-other", "oa-dcr-other")
    todo = lifecycle.create(endpoint.id, queue="q", title="from a chat app")
    consent = Consent(board_login(oauth_live, "oa-dcr"), "oa-dcr", (READ, WORK))
    url = oauth_live.url("/mcp/oa-dcr/oauth")

    tools, claimed, storage = run(_sdk_session(url, consent))

    assert "claim_next" in tools and "list_todos" in tools
    assert not claimed.is_error, claimed
    assert todo.id in json.dumps(claimed.structured_content)
    # What the human saw and what went back: the client and its redirect host, state and iss.
    assert "SDK test client" in consent.pages[0] and "127.0.0.1:33418" in consent.pages[0]
    query = parse_qs(urlsplit(consent.seen[0]).query)
    assert query["resource"] == [url] and query["code_challenge_method"] == ["S256"]
    assert consent.answer["iss"] == [oauth_live.base]
    assert storage.tokens is not None and storage.client is not None
    token = storage.tokens.access_token
    assert storage.tokens.refresh_token
    # The same token, for exactly this resource, is refused on another endpoint's OAuth URL.
    refused = _mcp(oauth_live, f"/mcp/{other.slug}/oauth", token, TOOLS_LIST, "tools/list")
    assert refused.status_code == 401, refused.text
    challenge = refused.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge
    assert (
        f'resource_metadata="{oauth_live.base}/.well-known/oauth-protected-resource'
        f'/mcp/{other.slug}/oauth"' in challenge
    )
    # ... and on the key URL, which takes keys only and says nothing of OAuth.
    key_url = _mcp(oauth_live, f"/mcp/{endpoint.slug}", token, TOOLS_LIST, "tools/list")
    assert key_url.status_code == 401
    assert "oauth" not in key_url.text.lower() and "resource_metadata" not in str(key_url.headers)
    # ... and a token presented as a query parameter is never read.
    query_token = httpx2.post(
        oauth_live.url(f"/mcp/{endpoint.slug}/oauth?access_token={token}"),
        headers={k: v for k, v in modern_headers("", "tools/list").items() if k != "Authorization"},
        content=json.dumps(TOOLS_LIST).encode(),
        timeout=30,
    )
    assert query_token.status_code == 401


def test_the_sdk_signs_in_by_a_client_metadata_document(
    oauth_live: LiveServer, metadata_host: MetadataHost
) -> None:
    _human, endpoint = _operator("oa-cimd", "oa-cimd")
    lifecycle.create(endpoint.id, queue="q", title="via a metadata document")
    client_id = metadata_host.url("/clients/sdk.json")
    metadata_host.serve_json(
        "/clients/sdk.json",
        {
            "client_id": client_id,
            "client_name": "Metadata Document Client",
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
    )
    consent = Consent(board_login(oauth_live, "oa-cimd"), "oa-cimd", (READ, WORK))
    url = oauth_live.url("/mcp/oa-cimd/oauth")

    tools, claimed, storage = run(_sdk_session(url, consent, client_metadata_url=client_id))

    assert "claim_next" in tools and not claimed.is_error, claimed
    assert parse_qs(urlsplit(consent.seen[0]).query)["client_id"] == [client_id]
    assert "Metadata Document Client" in consent.pages[0]
    assert storage.client is not None and storage.client.client_id == client_id
    app = Application.objects.get(client_id=client_id)
    assert app.registration_source == Application.RegistrationSource.CIMD


def _authorize_raw(
    server: LiveServer, session: httpx2.Client, client_id: str, resource: str | None
) -> httpx2.Response:
    verifier, challenge = pkce()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "st",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    if resource is not None:
        query["resource"] = resource
    response = session.get("/oauth/authorize/?" + urlencode(query))
    response.extensions["verifier"] = verifier
    return response


def test_bad_client_metadata_documents_leave_the_client_unknown(
    oauth_live: LiveServer, metadata_host: MetadataHost
) -> None:
    _operator("oa-badcimd", "oa-badcimd")
    session = board_login(oauth_live, "oa-badcimd")
    wrong_id = metadata_host.serve_json(
        "/clients/wrong-id.json",
        {"client_id": "https://elsewhere.example/c.json", "redirect_uris": [REDIRECT]},
    )
    not_json = metadata_host.serve_raw("/clients/not-json.json", 200, "text/html", b"<p>hi</p>")
    too_big = metadata_host.serve_json(
        "/clients/too-big.json",
        {
            "client_id": metadata_host.url("/clients/too-big.json"),
            "redirect_uris": [REDIRECT],
            "padding": "x" * 20_000,
        },
    )
    private_redirect = metadata_host.serve_json(
        "/clients/private.json",
        {
            "client_id": metadata_host.url("/clients/private.json"),
            "redirect_uris": ["https://10.1.2.3/callback"],
        },
    )
    plain_http = f"http://127.0.0.1:{metadata_host.port}/clients/plain.json"
    for client_id in (wrong_id, not_json, too_big, private_redirect, plain_http):
        response = _authorize_raw(oauth_live, session, client_id, None)
        assert response.status_code == 400, (client_id, response.text)
        assert response.headers["content-type"].startswith("application/json")
        assert response.json()["error"] == "invalid_request", response.text
    assert not Application.objects.filter(client_id__startswith="https://127.0.0.1").exists()


def _raw_sign_in(
    server: LiveServer, username: str, slug: str, kind: str, scopes: tuple[str, ...]
) -> tuple[str, str, httpx2.Client]:
    """DCR, consent and the token exchange over raw HTTP: (access token, client id, session)."""
    issued, client_id, session = _raw_grant(server, username, slug, kind, scopes)
    return issued["access_token"], client_id, session


def _raw_grant(
    server: LiveServer,
    username: str,
    slug: str,
    kind: str,
    scopes: tuple[str, ...],
    session: httpx2.Client | None = None,
) -> tuple[dict[str, Any], str, httpx2.Client]:
    """``_raw_sign_in`` answering the whole token response (the refresh token too)."""
    session = session or board_login(server, username)
    code = _raw_code(server, session, slug, kind, scopes)
    issued = _exchange(server, code)
    assert issued.status_code == 200, issued.text
    return issued.json(), code.client_id, session


@dataclass(frozen=True)
class _Code:
    """An authorization code as its client holds it: what the token request sends with it."""

    code: str
    client_id: str
    verifier: str
    resource: str


def _raw_code(
    server: LiveServer, session: httpx2.Client, slug: str, kind: str, scopes: tuple[str, ...]
) -> _Code:
    """DCR and consent over raw HTTP: the code the consent redirects with."""
    registered = httpx2.post(
        server.url("/oauth/register/"),
        json={
            "client_name": f"raw {kind}",
            "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none",
        },
        timeout=30,
    ).json()
    resource = server.url(f"/mcp/{slug}/oauth" if kind == "mcp" else f"/a2a/{slug}")
    page = _authorize_raw(server, session, registered["client_id"], resource)
    assert page.status_code == 200, page.text[:500]
    fields = form_fields(page.text)
    answer = session.post(
        str(page.url),
        data={**fields, "endpoint": slug, "scopes": list(scopes), "allow": "true"},
    )
    assert answer.status_code == 302, answer.text[:500]
    code = parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]
    return _Code(code, registered["client_id"], page.extensions["verifier"], resource)


def _exchange(server: LiveServer, code: _Code) -> httpx2.Response:
    """The token request for ``code``."""
    return httpx2.post(
        server.url("/oauth/token/"),
        data={
            "grant_type": "authorization_code",
            "code": code.code,
            "redirect_uri": REDIRECT,
            "client_id": code.client_id,
            "code_verifier": code.verifier,
            "resource": code.resource,
        },
        timeout=30,
    )


def test_a_call_outside_the_tokens_scopes_is_403_insufficient_scope(
    oauth_live: LiveServer,
) -> None:
    _human, endpoint = _operator("oa-scope", "oa-scope")
    lifecycle.create(endpoint.id, queue="q")
    token, _client, _session = _raw_sign_in(oauth_live, "oa-scope", "oa-scope", "mcp", (READ,))
    path = "/mcp/oa-scope/oauth"
    listed = _mcp(oauth_live, path, token, TOOLS_LIST, "tools/list")
    assert listed.status_code == 200, listed.text
    names = [t["name"] for t in listed.json()["result"]["tools"]]
    assert names == ["list_todos", "get_todo"]
    claim = _mcp(oauth_live, path, token, tool_call("claim_next", {"queue": "q"}), "tools/call")
    assert claim.status_code == 403, claim.text
    challenge = claim.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="todos:work"' in challenge
    assert "resource_metadata=" in challenge
    assert claim.json()["error"]["message"].endswith("needs the todos:work scope")
    # A verb the endpoint itself lacks is the usual forbidden tool error, not a step-up.
    reject = _mcp(oauth_live, path, token, tool_call("reject", {"todo_id": "x"}), "tools/call")
    assert reject.status_code == 200 and reject.json()["result"]["isError"] is True


def test_a_token_without_a_resource_and_a_key_on_the_oauth_url_are_refused(
    oauth_live: LiveServer,
) -> None:
    human, endpoint = _operator("oa-nores", "oa-nores")
    app = Application.objects.create(
        name="old",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris=REDIRECT,
    )
    raw = secrets.token_urlsafe(30)
    AccessToken.objects.create(
        user=human,
        application=app,
        token_checksum=hashlib.sha256(raw.encode()).hexdigest(),
        expires=timezone.now() + timedelta(hours=1),
        scope="todos:read todos:work",
        resource=[],
    )
    path = f"/mcp/{endpoint.slug}/oauth"
    assert _mcp(oauth_live, path, raw, TOOLS_LIST, "tools/list").status_code == 401
    _key, key = credentials.mint_key(endpoint)
    on_oauth = _mcp(oauth_live, path, key, TOOLS_LIST, "tools/list")
    assert on_oauth.status_code == 401
    # No token at all: the challenge names the metadata by absolute URL and the scopes.
    bare = httpx2.post(
        oauth_live.url(path),
        headers={k: v for k, v in modern_headers("", "tools/list").items() if k != "Authorization"},
        content=json.dumps(TOOLS_LIST).encode(),
        timeout=30,
    )
    assert bare.status_code == 401
    assert bare.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{oauth_live.base}/.well-known/oauth-protected-resource'
        f'{path}", scope="todos:read todos:work todos:submit"'
    )
    # The key URL with the key works as it always did and never mentions OAuth.
    keyed = _mcp(oauth_live, f"/mcp/{endpoint.slug}", key, TOOLS_LIST, "tools/list")
    assert keyed.status_code == 200 and "claim_next" in keyed.text
    unauthenticated = httpx2.post(oauth_live.url(f"/mcp/{endpoint.slug}"), timeout=30)
    assert unauthenticated.status_code == 401
    assert "resource_metadata" not in unauthenticated.headers["www-authenticate"]
    well_known = httpx2.get(
        oauth_live.url(f"/.well-known/oauth-protected-resource/mcp/{endpoint.slug}"), timeout=30
    )
    assert well_known.status_code == 404


def test_an_oauth_clients_tasks_outlive_its_hourly_access_token(oauth_live: LiveServer) -> None:
    """tasks/list is keyed by the grant (client, human, endpoint), not the access token: after
    a refresh hands out a new token the client still lists what it submitted; another client
    of the same human lists nothing of it."""
    _human, endpoint = _operator("oa-tasks", "oa-tasks", [*DRAIN_VERBS, Verb.SUBMIT])
    scopes = (READ, WORK, SUBMIT)
    issued, client_id, session = _raw_grant(oauth_live, "oa-tasks", "oa-tasks", "mcp", scopes)
    url = oauth_live.url(f"/mcp/{endpoint.slug}/oauth")
    first = Legacy(url, issued["access_token"])
    task_id = first.result(
        "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}, "task": {}}
    )["task"]["taskId"]
    assert [t["taskId"] for t in first.result("tasks/list", {})["tasks"]] == [task_id]

    refreshed = httpx2.post(
        oauth_live.url("/oauth/token/"),
        data={
            "grant_type": "refresh_token",
            "refresh_token": issued["refresh_token"],
            "client_id": client_id,
        },
        timeout=30,
    )
    assert refreshed.status_code == 200, refreshed.text
    token = refreshed.json()["access_token"]
    assert token != issued["access_token"]
    later = Legacy(url, token)
    assert [t["taskId"] for t in later.result("tasks/list", {})["tasks"]] == [task_id]
    assert later.result("tasks/get", {"taskId": task_id})["status"] == "working"

    other, _other_client, _ = _raw_grant(oauth_live, "oa-tasks", "oa-tasks", "mcp", scopes, session)
    assert Legacy(url, other["access_token"]).result("tasks/list", {})["tasks"] == []


def test_revoking_on_the_board_refuses_the_next_request(oauth_live: LiveServer) -> None:
    human, endpoint = _operator("oa-revoke", "oa-revoke")
    token, client_id, session = _raw_sign_in(
        oauth_live, "oa-revoke", "oa-revoke", "mcp", (READ, WORK)
    )
    path = f"/mcp/{endpoint.slug}/oauth"
    assert _mcp(oauth_live, path, token, TOOLS_LIST, "tools/list").status_code == 200
    page = session.get(f"/endpoints/{endpoint.slug}")
    assert "raw mcp" in page.text and "todos:read todos:work" in page.text
    application = Application.objects.get(client_id=client_id)
    action = f"/endpoints/{endpoint.slug}/connections/{application.pk}/{human.pk}/revoke"
    assert action in page.text
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert csrf is not None
    revoked = session.post(action, data={"csrfmiddlewaretoken": csrf.group(1)})
    assert revoked.status_code == 302
    # The very next request: tokens are never cached.
    assert _mcp(oauth_live, path, token, TOOLS_LIST, "tools/list").status_code == 401
    assert "No connections." in session.get(f"/endpoints/{endpoint.slug}").text


def test_a_code_exchanged_twice_revokes_the_tokens_of_its_first_exchange(
    oauth_live: LiveServer,
) -> None:
    """RFC 6749 §4.1.2: the second exchange is refused, and the first's tokens stop working on
    the very next request (and its refresh token with them)."""
    _human, endpoint = _operator("oa-replay", "oa-replay")
    path = f"/mcp/{endpoint.slug}/oauth"
    code = _raw_code(oauth_live, board_login(oauth_live, "oa-replay"), "oa-replay", "mcp", (READ,))
    first = _exchange(oauth_live, code)
    assert first.status_code == 200, first.text
    issued = first.json()
    assert (
        _mcp(oauth_live, path, issued["access_token"], TOOLS_LIST, "tools/list").status_code == 200
    )

    again = _exchange(oauth_live, code)

    assert again.status_code == 400, again.text
    assert again.headers["content-type"].startswith("application/json")
    assert again.json()["error"] == "invalid_grant"
    refused = _mcp(oauth_live, path, issued["access_token"], TOOLS_LIST, "tools/list")
    assert refused.status_code == 401, refused.text
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    refreshed = httpx2.post(
        oauth_live.url("/oauth/token/"),
        data={
            "grant_type": "refresh_token",
            "refresh_token": issued["refresh_token"],
            "client_id": code.client_id,
        },
        timeout=30,
    )
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"


def test_the_discovery_documents_refuse_a_foreign_host_in_json(oauth_live: LiveServer) -> None:
    """Through daphne as a client meets them: a Host not in ALLOWED_HOSTS is RFC 6749 JSON on
    the OAuth documents, never Django's HTML page, and the Board keeps its page."""
    for path in (
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-protected-resource/a2a/anything",
    ):
        refused = httpx2.get(oauth_live.url(path), headers={"Host": "evil.example"}, timeout=30)
        assert refused.status_code == 400, refused.text
        assert refused.headers["content-type"] == "application/json"
        assert refused.json()["error"] == "invalid_request"
        assert "evil.example" not in refused.text
    board = httpx2.get(oauth_live.url("/login/"), headers={"Host": "evil.example"}, timeout=30)
    assert board.status_code == 400 and board.headers["content-type"].startswith("text/html")


def test_a2a_lists_both_schemes_and_takes_a_token_issued_for_it(oauth_live: LiveServer) -> None:
    verbs = [*DRAIN_VERBS, Verb.A2A]
    _human, endpoint = _operator("oa-a2a", "oa-a2a", verbs)
    token, _client, _session = _raw_sign_in(oauth_live, "oa-a2a", "oa-a2a", "a2a", (SUBMIT,))
    card = httpx2.get(
        oauth_live.url(f"/a2a/{endpoint.slug}/.well-known/agent-card.json"),
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert card.status_code == 200, card.text
    schemes = card.json()["securitySchemes"]
    assert schemes["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    flow = schemes["oauth2"]["oauth2SecurityScheme"]
    assert flow["oauth2MetadataUrl"] == oauth_live.url("/.well-known/oauth-authorization-server")
    assert flow["flows"]["authorizationCode"]["tokenUrl"] == oauth_live.url("/oauth/token/")
    send = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": "m1",
                "role": "ROLE_USER",
                "parts": [{"text": "please"}],
                "metadata": {"queue": "q"},
            },
            "configuration": {"returnImmediately": True},
        },
    }
    sent = httpx2.post(
        oauth_live.url(f"/a2a/{endpoint.slug}"),
        headers={"Authorization": f"Bearer {token}", "A2A-Version": "1.0"},
        json=send,
        timeout=30,
    )
    assert sent.status_code == 200 and "task" in sent.json()["result"], sent.text
    # The MCP URL is another resource: the A2A token is refused there.
    mcp = _mcp(oauth_live, f"/mcp/{endpoint.slug}/oauth", token, TOOLS_LIST, "tools/list")
    assert mcp.status_code == 401
    # A token for MCP is refused at A2A; one without todos:submit is a step-up 403.
    mcp_token, _c, _s = _raw_sign_in(oauth_live, "oa-a2a", "oa-a2a", "mcp", (READ, WORK))
    other = httpx2.post(
        oauth_live.url(f"/a2a/{endpoint.slug}"),
        headers={"Authorization": f"Bearer {mcp_token}", "A2A-Version": "1.0"},
        json=send,
        timeout=30,
    )
    assert other.status_code == 401
    narrow, _c, _s = _raw_sign_in(oauth_live, "oa-a2a", "oa-a2a", "a2a", (READ,))
    stepped = httpx2.post(
        oauth_live.url(f"/a2a/{endpoint.slug}"),
        headers={"Authorization": f"Bearer {narrow}", "A2A-Version": "1.0"},
        json=send,
        timeout=30,
    )
    assert stepped.status_code == 403
    assert 'scope="todos:submit"' in stepped.headers["www-authenticate"]


def test_a_requesters_call_without_todos_submit_is_403_naming_it(oauth_live: LiveServer) -> None:
    verbs = [*DRAIN_VERBS, Verb.SUBMIT]
    _human, endpoint = _operator("oa-submit", "oa-submit", verbs)
    path = f"/mcp/{endpoint.slug}/oauth"
    worker, _c, _s = _raw_sign_in(oauth_live, "oa-submit", "oa-submit", "mcp", (READ, WORK))
    task = {"taskId": "td_aaaaaaaaaaaaaaaaaaaa", "_meta": ENVELOPE}
    calls = {
        "submit_todo": tool_call("submit_todo", {"queue": "q", "title": "from a chat"}),
        # The MCP App's own tools ride on submit too (mcp_server/verbs.py).
        "cancel_todo": tool_call("cancel_todo", {"todo_id": "td_aaaaaaaaaaaaaaaaaaaa"}),
        "answer_todo": tool_call("answer_todo", {"todo_id": "td_aaaaaaaaaaaaaaaaaaaa"}),
        "retry_todo": tool_call("retry_todo", {"todo_id": "td_aaaaaaaaaaaaaaaaaaaa"}),
        # ... and so do MCP Tasks' methods (mcp_server/taskwire.py: verbs.can_submit).
        "tasks/get": {"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": task},
        "tasks/cancel": {"jsonrpc": "2.0", "id": 4, "method": "tasks/cancel", "params": task},
    }
    for label, body in calls.items():
        method = body["method"]
        refused = _mcp(oauth_live, path, worker, body, method)
        assert refused.status_code == 403, (label, refused.text)
        challenge = refused.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge, label
        assert 'scope="todos:submit"' in challenge, (label, challenge)
        assert refused.json()["error"]["message"].endswith("needs the todos:submit scope")
    assert not Todo.objects.filter(endpoint=endpoint).exists()

    # With todos:submit the same call creates the todo.
    requester, _c, _s = _raw_sign_in(oauth_live, "oa-submit", "oa-submit", "mcp", (SUBMIT,))
    submitted = _mcp(oauth_live, path, requester, calls["submit_todo"], "tools/call")
    assert submitted.status_code == 200, submitted.text
    assert submitted.json()["result"].get("isError") is not True, submitted.text
    todo = Todo.objects.get(endpoint=endpoint, title="from a chat")
    # ... and a tasks/ method gets past the scope check to the Tasks code's own answer, for a
    # client that declared the extension: the todo it submitted is its task, an unknown id is
    # the Tasks code's "not found" (-32602, at 400 on this wire).
    declared = {
        **ENVELOPE,
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
    }

    def tasks_get(task_id: str) -> httpx2.Response:
        body = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tasks/get",
            "params": {"taskId": task_id, "_meta": declared},
        }
        return _mcp(oauth_live, path, requester, body, "tasks/get")

    polled = tasks_get(todo.id)
    assert polled.status_code == 200, polled.text
    assert polled.json()["result"]["taskId"] == todo.id
    assert polled.json()["result"]["status"] == "working"
    unknown = tasks_get("td_aaaaaaaaaaaaaaaaaaaa")
    assert unknown.status_code == 400, unknown.text
    assert unknown.json()["error"] == {
        "code": -32602,
        "message": "Failed to retrieve task: Task not found",
    }
