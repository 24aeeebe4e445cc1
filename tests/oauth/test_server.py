"""The authorization server in process: discovery, registration, consent and tokens, and every
refusal in RFC 6749's JSON shape (docs/guides/agents.md, "Connect with OAuth")."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Grant, RefreshToken

from switchboard import oauth
from switchboard.lib import oauth_scopes
from switchboard.models import SpentCode, slug_validator
from tests.factories import EndpointFactory, HumanFactory
from tests.oauth import flow

pytestmark = pytest.mark.django_db


def granted() -> Any:
    """Access tokens granted by a human (DCR's registration tokens are access tokens too)."""
    return AccessToken.objects.exclude(scope="oauth2_provider:registration")


def assert_oauth_error(response: Any, status: int, error: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body: dict[str, Any] = response.json()
    assert body["error"] == error, body
    return body


@pytest.fixture
def operator(client: Client) -> Any:
    human = HumanFactory(username="ops")
    client.force_login(human)
    return human


def test_the_authorization_server_metadata_says_what_it_does(client: Client) -> None:
    data = client.get("/.well-known/oauth-authorization-server").json()
    assert data["issuer"] == flow.ORIGIN
    assert data["authorization_endpoint"] == f"{flow.ORIGIN}/oauth/authorize/"
    assert data["token_endpoint"] == f"{flow.ORIGIN}/oauth/token/"
    assert data["registration_endpoint"] == f"{flow.ORIGIN}/oauth/register/"
    assert data["code_challenge_methods_supported"] == ["S256"]
    assert data["response_types_supported"] == ["code"]
    assert set(data["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    assert data["scopes_supported"] == list(oauth_scopes.ALL)
    assert data["client_id_metadata_document_supported"] is True
    assert data["authorization_response_iss_parameter_supported"] is True


def test_each_endpoint_resource_has_path_inserted_metadata(client: Client) -> None:
    mcp = client.get("/.well-known/oauth-protected-resource/mcp/agent-x/oauth").json()
    assert mcp["resource"] == f"{flow.ORIGIN}/mcp/agent-x/oauth"
    assert mcp["authorization_servers"] == [flow.ORIGIN]
    assert mcp["scopes_supported"] == list(oauth_scopes.ALL)
    a2a = client.get("/.well-known/oauth-protected-resource/a2a/agent-x").json()
    assert a2a["resource"] == f"{flow.ORIGIN}/a2a/agent-x"
    # The key URL is no OAuth resource: nothing is advertised for it, in JSON.
    for path in (
        "/.well-known/oauth-protected-resource/mcp/agent-x",
        "/.well-known/oauth-protected-resource",
        "/.well-known/openid-configuration",
        "/oauth/nothing",
    ):
        assert_oauth_error(client.get(path), 404, "invalid_request")


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-protected-resource/mcp/agent-x/oauth",
        "/.well-known/oauth-protected-resource/a2a/agent-x",
        "/.well-known/openid-configuration",
        "/oauth/authorize/",
        "/oauth/revoke/",
    ],
)
def test_a_host_not_in_allowed_hosts_is_a_json_400_on_the_oauth_paths(
    client: Client, path: str
) -> None:
    """An OAuth client parses no HTML: Django's refusal of the Host is RFC 6749 JSON here,
    saying why without echoing the host."""
    for response in (
        client.get(path, HTTP_HOST="evil.example"),
        client.post(path, {"token": "x"}, HTTP_HOST="evil.example"),
    ):
        body = assert_oauth_error(response, 400, "invalid_request")
        assert "ALLOWED_HOSTS" in body["error_description"]
        assert b"evil.example" not in response.content
        assert response["Cache-Control"] == "no-store"


def test_a_host_not_in_allowed_hosts_is_still_the_boards_page_on_the_board(
    client: Client,
) -> None:
    for path in ("/", "/login/", "/endpoints/"):
        response = client.get(path, HTTP_HOST="evil.example")
        assert response.status_code == 400
        assert response["Content-Type"].startswith("text/html"), path


@pytest.mark.parametrize(
    "slug", ["agent-x", "a", "9_b-c", "Agent", "-agent", "_a", "a.b", "a b", "a%2fb", "a/b", ""]
)
def test_the_resources_take_exactly_the_slugs_an_endpoint_may_have(slug: str) -> None:
    try:
        slug_validator(slug)
        valid = True
    except ValidationError:
        valid = False

    for kind, path in ((oauth.MCP, f"/mcp/{slug}/oauth"), (oauth.A2A, f"/a2a/{slug}")):
        parsed = oauth.parse_resource(flow.ORIGIN + path)
        assert parsed == ((flow.ORIGIN, kind, slug) if valid else None), (kind, slug)


@pytest.mark.parametrize(
    "uri",
    [
        "https://10.0.0.7/cb",
        "https://192.168.1.5/cb",
        "http://169.254.169.254/latest",
        "https://[fd00::1]/cb",
        "https://intranet/cb",
        "https://printer.local/cb",
        "http://example.com/cb",
        "https://example.com/cb#frag",
        "javascript:alert(1)",
    ],
)
def test_registration_refuses_private_and_unsafe_redirect_uris(client: Client, uri: str) -> None:
    response = client.post(
        "/oauth/register/",
        {"client_name": "x", "redirect_uris": [uri], "token_endpoint_auth_method": "none"},
        content_type="application/json",
    )
    assert_oauth_error(response, 400, "invalid_redirect_uri")


@pytest.mark.parametrize(
    "uri",
    [
        "http://127.0.0.1:8765/callback",
        "http://localhost/cb",
        "https://claude.ai/api/mcp/auth_callback",
    ],
)
def test_registration_accepts_loopback_and_public_https(client: Client, uri: str) -> None:
    data = flow.register(client, redirect_uris=[uri])
    assert data["client_id"] and data["redirect_uris"] == [uri]


def test_registration_refuses_bad_bodies_in_json(client: Client) -> None:
    post = lambda body: client.post(  # noqa: E731
        "/oauth/register/", body, content_type="application/json"
    )
    assert_oauth_error(post("not json"), 400, "invalid_client_metadata")
    assert_oauth_error(post([1]), 400, "invalid_client_metadata")
    assert_oauth_error(
        post({"redirect_uris": [flow.REDIRECT], "grant_types": ["implicit"]}),
        400,
        "invalid_client_metadata",
    )
    assert_oauth_error(
        post({"redirect_uris": [flow.REDIRECT], "grant_types": ["password"]}),
        400,
        "invalid_client_metadata",
    )


def test_a_full_sign_in_issues_a_token_for_exactly_that_resource(
    client: Client, operator: Any
) -> None:
    endpoint = EndpointFactory(owner=operator, slug="mine")
    data = flow.sign_in(client, "mine")
    assert data["token_type"] == "Bearer"
    assert data["scope"] == "todos:read todos:work"
    assert 0 < data["expires_in"] <= 3600
    assert data["refresh_token"]
    row = granted().get()
    # Stored as a checksum only: the table is useless to whoever reads it.
    assert row.token in ("", None) and data["access_token"] not in row.token_checksum
    assert row.resource == [f"{flow.ORIGIN}/mcp/{endpoint.slug}/oauth"]
    assert RefreshToken.objects.get().token in ("", None)


def test_the_consent_page_names_the_client_and_its_redirect_host(
    client: Client, operator: Any
) -> None:
    EndpointFactory(owner=operator, slug="mine")
    EndpointFactory(slug="theirs")  # another operator's: never offered
    registered = flow.register(client, client_name="Claude <b>")
    auth = flow.authorization(registered["client_id"], None)
    html = client.get(auth.url()).content.decode()
    assert "Claude &lt;b&gt;" in html
    assert "127.0.0.1:33418" in html
    assert 'value="mine"' in html and "theirs" not in html
    assert 'name="csrfmiddlewaretoken"' in html


def test_the_consent_pages_form_may_redirect_to_its_clients_redirect_uri_only(
    client: Client, operator: Any
) -> None:
    """Chromium holds the 302 that follows Allow or Deny to the consent page's form-action: under
    the Board's 'self' alone the browser never reached the client (tests/e2e/test_oauth.py)."""
    EndpointFactory(owner=operator, slug="mine")
    registered = flow.register(client)
    auth = flow.authorization(registered["client_id"], "mine")
    policy = client.get(auth.url())["Content-Security-Policy"]
    [form_action] = [d for d in policy.split("; ") if d.startswith("form-action")]
    assert form_action == "form-action 'self' http://127.0.0.1:33418"
    # The Board's other pages keep 'self' alone.
    assert "form-action 'self';" in client.get("/")["Content-Security-Policy"] + ";"


def test_without_a_resource_the_operator_picks_the_endpoint(client: Client, operator: Any) -> None:
    EndpointFactory(owner=operator, slug="one")
    EndpointFactory(owner=operator, slug="two")
    registered = flow.register(client)
    auth = flow.authorization(registered["client_id"], None)
    answer = flow.consent(client, auth, "two", (oauth_scopes.READ,))
    assert answer["state"] == [auth.state]
    assert answer["iss"] == [flow.ORIGIN]
    response = flow.token(client, auth, answer["code"][0])
    assert response.status_code == 200, response.content
    assert granted().get().resource == [f"{flow.ORIGIN}/mcp/two/oauth"]
    assert granted().get().scope == "todos:read"


def test_deny_redirects_with_access_denied_and_the_state(client: Client, operator: Any) -> None:
    EndpointFactory(owner=operator, slug="mine")
    registered = flow.register(client)
    auth = flow.authorization(registered["client_id"], "mine")
    answer = flow.consent(client, auth, "mine", allow=False)
    assert answer["error"] == ["access_denied"] and answer["state"] == [auth.state]
    assert answer["iss"] == [flow.ORIGIN]  # RFC 9207: on an error as on a code
    assert "code" not in answer
    assert not granted().exists()


def test_the_consent_post_needs_the_csrf_token(operator: Any) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(operator)
    EndpointFactory(owner=operator, slug="mine")
    registered = flow.register(strict)
    auth = flow.authorization(registered["client_id"], "mine")
    fields = flow.form_fields(strict.get(auth.url()).content.decode())
    del fields["csrfmiddlewaretoken"]
    response = strict.post(auth.url(), {**fields, "endpoint": "mine", "allow": "true"})
    assert response.status_code == 403
    assert not granted().exists()


def test_consent_needs_the_board_login(client: Client) -> None:
    registered = flow.register(client)
    auth = flow.authorization(registered["client_id"], None)
    response = client.get(auth.url())
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_another_operators_endpoint_is_refused_at_the_redirect(
    client: Client, operator: Any
) -> None:
    EndpointFactory(slug="theirs")
    registered = flow.register(client)
    auth = flow.authorization(registered["client_id"], "theirs")
    response = client.get(auth.url())
    assert response.status_code == 302
    query = flow.parse_qs(flow.urlsplit(response["Location"]).query)
    assert query["error"] == ["invalid_target"] and query["state"] == [auth.state]
    assert query["iss"] == [flow.ORIGIN]


def test_a_forged_endpoint_choice_is_refused(client: Client, operator: Any) -> None:
    EndpointFactory(owner=operator, slug="mine")
    EndpointFactory(slug="theirs")
    registered = flow.register(client)
    auth = flow.authorization(registered["client_id"], None)
    fields = flow.form_fields(client.get(auth.url()).content.decode())
    response = client.post(
        auth.url(), {**fields, "endpoint": "theirs", "scopes": ["todos:read"], "allow": "true"}
    )
    assert response.status_code == 302
    assert "error=invalid_target" in response["Location"]
    assert not granted().exists()


def test_bad_authorization_requests_answer_in_json_or_by_redirect(
    client: Client, operator: Any
) -> None:
    EndpointFactory(owner=operator, slug="mine")
    registered = flow.register(client)
    # Unknown client, mismatched redirect URI: no redirect is safe, so JSON (never HTML).
    unknown = flow.authorization("no-such-client", "mine")
    assert (
        "client_id"
        in assert_oauth_error(client.get(unknown.url()), 400, "invalid_request")[
            "error_description"
        ]
    )
    other = flow.authorization(
        registered["client_id"], "mine", redirect_uri="http://127.0.0.1:33418/elsewhere"
    )
    body = assert_oauth_error(client.get(other.url()), 400, "invalid_request")
    assert "redirect" in body["error_description"].lower()
    evil = flow.authorization(registered["client_id"], "mine", redirect_uri="https://evil.example/")
    assert_oauth_error(client.get(evil.url()), 400, "invalid_request")
    # Missing or plain PKCE: the error goes back to the client's redirect URI with the state.
    for extra in ({"code_challenge_method": "plain"}, {"code_challenge": ""}):
        auth = flow.authorization(registered["client_id"], "mine", **extra)
        response = client.get(auth.url())
        assert response.status_code == 302, response.content
        query = flow.parse_qs(flow.urlsplit(response["Location"]).query)
        assert query["error"] == ["invalid_request"] and query["state"] == [auth.state]
    # A resource that is not one of this server's.
    auth = flow.authorization(
        registered["client_id"], None, resource="https://elsewhere.example/mcp/mine/oauth"
    )
    response = client.get(auth.url())
    assert "error=invalid_target" in response["Location"]


def test_a_code_is_used_once_with_its_verifier_for_its_resource(
    client: Client, operator: Any
) -> None:
    EndpointFactory(owner=operator, slug="mine")
    EndpointFactory(owner=operator, slug="other")
    registered = flow.register(client)

    def fresh_code() -> tuple[flow.Authorization, str]:
        auth = flow.authorization(registered["client_id"], "mine")
        return auth, flow.consent(client, auth, "mine")["code"][0]

    auth, code = fresh_code()
    wrong = flow.Authorization(auth.client_id, "x" * 50, auth.state, auth.query)
    assert_oauth_error(flow.token(client, wrong, code), 400, "invalid_grant")
    auth, code = fresh_code()
    assert_oauth_error(
        flow.token(client, auth, code, resource=f"{flow.ORIGIN}/mcp/other/oauth"),
        400,
        "invalid_target",
    )
    auth, code = fresh_code()
    Grant.objects.filter(code=code).update(expires=timezone.now() - timedelta(seconds=1))
    assert_oauth_error(flow.token(client, auth, code), 400, "invalid_grant")
    auth, code = fresh_code()
    assert flow.token(client, auth, code).status_code == 200
    assert_oauth_error(flow.token(client, auth, code), 400, "invalid_grant")
    password = client.post(
        "/oauth/token/",
        {
            "grant_type": "password",
            "username": "ops",
            "password": "correct horse battery staple",
            "client_id": registered["client_id"],
        },
    )
    assert password.status_code in (400, 401), password.content
    assert "access_token" not in password.json()
    assert_oauth_error(
        client.post("/oauth/token/", {"grant_type": "implicit", "client_id": auth.client_id}),
        400,
        "unsupported_grant_type",
    )


def _refresh(client: Client, client_id: str, token: str) -> Any:
    return client.post(
        "/oauth/token/",
        {"grant_type": "refresh_token", "refresh_token": token, "client_id": client_id},
    )


def test_a_reused_code_is_refused_and_revokes_what_its_first_exchange_issued(
    client: Client, operator: Any
) -> None:
    """RFC 6749 §4.1.2: the tokens issued from a code used twice are revoked, those rotated
    from them since included; another sign-in of the same client and human is not."""
    EndpointFactory(owner=operator, slug="mine")
    resource = f"{flow.ORIGIN}/mcp/mine/oauth"
    registered = flow.register(client)
    client_id = registered["client_id"]
    auth = flow.authorization(client_id, "mine")
    code = flow.consent(client, auth, "mine")["code"][0]
    first = flow.token(client, auth, code)
    assert first.status_code == 200, first.content
    issued = first.json()
    other_auth = flow.authorization(client_id, "mine")
    other = flow.token(client, other_auth, flow.consent(client, other_auth, "mine")["code"][0])
    assert other.status_code == 200, other.content
    # Only the code's SHA-256 is kept, with what it issued.
    spent = SpentCode.objects.get(digest=hashlib.sha256(code.encode()).digest())
    assert (
        spent.access_token_id
        == AccessToken.objects.get(
            token_checksum=hashlib.sha256(issued["access_token"].encode()).hexdigest()
        ).pk
    )
    assert spent.token_family is not None
    assert code not in repr(list(SpentCode.objects.values()))
    rotated = _refresh(client, client_id, issued["refresh_token"])
    assert rotated.status_code == 200, rotated.content
    assert oauth.resolve_token(rotated.json()["access_token"], resource)

    assert_oauth_error(flow.token(client, auth, code), 400, "invalid_grant")

    for token in (issued["access_token"], rotated.json()["access_token"]):
        with pytest.raises(oauth.TokenRejected):
            oauth.resolve_token(token, resource)
    assert_oauth_error(
        _refresh(client, client_id, rotated.json()["refresh_token"]), 400, "invalid_grant"
    )
    # The other sign-in, of the same client by the same human, is untouched.
    assert oauth.resolve_token(other.json()["access_token"], resource)
    assert _refresh(client, client_id, other.json()["refresh_token"]).status_code == 200
    # A third try revokes nothing more and is refused alike.
    assert_oauth_error(flow.token(client, auth, code), 400, "invalid_grant")


def test_a_code_refused_at_its_exchange_is_not_spent(client: Client, operator: Any) -> None:
    """A wrong verifier or resource refuses the exchange and records nothing: the code is
    still good once, and only then spent."""
    EndpointFactory(owner=operator, slug="mine")
    EndpointFactory(owner=operator, slug="other")
    auth = flow.authorization(flow.register(client)["client_id"], "mine")
    code = flow.consent(client, auth, "mine")["code"][0]
    wrong = flow.Authorization(auth.client_id, "x" * 50, auth.state, auth.query)
    assert_oauth_error(flow.token(client, wrong, code), 400, "invalid_grant")
    elsewhere = flow.token(client, auth, code, resource=f"{flow.ORIGIN}/mcp/other/oauth")
    assert_oauth_error(elsewhere, 400, "invalid_target")
    assert not SpentCode.objects.exists()
    assert flow.token(client, auth, code).status_code == 200
    assert SpentCode.objects.count() == 1


def test_two_exchanges_of_one_code_at_once_leave_no_token_standing(
    client: Client, operator: Any
) -> None:
    """The second of two concurrent exchanges finds the first's record when it writes its own
    (the digest is unique: it waits for the first to commit): it is refused, its own tokens go
    with its transaction, and the first's are revoked. Here the first is a record already
    written for the code, naming another sign-in's tokens."""
    EndpointFactory(owner=operator, slug="mine")
    resource = f"{flow.ORIGIN}/mcp/mine/oauth"
    earlier = flow.sign_in(client, "mine")
    access = AccessToken.objects.get(
        token_checksum=hashlib.sha256(earlier["access_token"].encode()).hexdigest()
    )
    auth = flow.authorization(earlier["client_id"], "mine")
    code = flow.consent(client, auth, "mine")["code"][0]
    SpentCode.objects.create(
        digest=hashlib.sha256(code.encode()).digest(),
        access_token_id=access.pk,
        token_family=RefreshToken.objects.get(access_token=access).token_family,
    )
    live_before = set(granted().values_list("pk", flat=True))

    assert_oauth_error(flow.token(client, auth, code), 400, "invalid_grant")

    with pytest.raises(oauth.TokenRejected):
        oauth.resolve_token(earlier["access_token"], resource)
    # Nothing issued by this exchange survived it.
    assert set(granted().values_list("pk", flat=True)) <= live_before - {access.pk}
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()


def test_refresh_tokens_rotate_and_a_reused_one_revokes_the_family(
    client: Client, operator: Any
) -> None:
    EndpointFactory(owner=operator, slug="mine")
    first = flow.sign_in(client, "mine")
    refresh = lambda token: client.post(  # noqa: E731
        "/oauth/token/",
        {"grant_type": "refresh_token", "refresh_token": token, "client_id": first["client_id"]},
    )
    second = refresh(first["refresh_token"])
    assert second.status_code == 200, second.content
    rotated = second.json()
    assert rotated["refresh_token"] != first["refresh_token"]
    assert_oauth_error(refresh(first["refresh_token"]), 400, "invalid_grant")
    # The reuse revoked the whole family, the rotated token included.
    assert_oauth_error(refresh(rotated["refresh_token"]), 400, "invalid_grant")


def test_the_endpoint_page_lists_connections_and_revokes_them(
    client: Client, operator: Any
) -> None:
    EndpointFactory(owner=operator, slug="mine")
    data = flow.sign_in(client, "mine", (oauth_scopes.READ,))
    page = client.get("/endpoints/mine").content.decode()
    assert "Test Chat" in page and "todos:read" in page and "127.0.0.1:33418" in page
    application = granted().get().application
    response = client.post(f"/endpoints/mine/connections/{application.pk}/{operator.pk}/revoke")
    assert response.status_code == 302
    assert not granted().exists()
    assert RefreshToken.objects.get().revoked is not None
    assert "No connections." in client.get("/endpoints/mine").content.decode()
    assert data["access_token"]


def test_another_operator_cannot_revoke_a_connection(client: Client, operator: Any) -> None:
    EndpointFactory(owner=operator, slug="mine")
    flow.sign_in(client, "mine")
    application = granted().get().application
    client.force_login(HumanFactory(username="stranger"))
    response = client.post(f"/endpoints/mine/connections/{application.pk}/{operator.pk}/revoke")
    assert response.status_code == 404
    assert granted().exists()


def test_manage_oauth_lists_and_revokes(client: Client, operator: Any) -> None:
    from io import StringIO

    from django.core.management import call_command

    EndpointFactory(owner=operator, slug="mine")
    data = flow.sign_in(client, "mine")
    out = StringIO()
    call_command("oauth", "list", "--endpoint", "mine", stdout=out)
    assert data["client_id"] in out.getvalue() and "todos:read todos:work" in out.getvalue()
    out = StringIO()
    call_command("oauth", "revoke", "--endpoint", "mine", "--client", data["client_id"], stdout=out)
    assert out.getvalue().startswith("revoked 2 tokens")
    assert not granted().exists()


def test_the_admin_shows_oauth_rows_read_only(admin_client: Client) -> None:
    for model in ("application", "accesstoken", "refreshtoken", "grant"):
        listing = admin_client.get(f"/admin/oauth2_provider/{model}/")
        assert listing.status_code == 200
        assert admin_client.get(f"/admin/oauth2_provider/{model}/add/").status_code == 403


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param({"deny": "true"}, id="deny"),
        pytest.param({"allow": "true"}, id="allow"),
        pytest.param({"allow": "true", "code_challenge_method": ""}, id="missing-pkce"),
        pytest.param(
            {"allow": "true", "resource": "https://elsewhere.example/mcp/mine/oauth"},
            id="invalid-target",
        ),
        pytest.param({"allow": "true", "endpoint": "theirs"}, id="foreign-endpoint"),
        pytest.param({"allow": "true", "scopes": []}, id="no-scope"),
    ],
)
def test_a_tampered_redirect_uri_on_the_consent_post_is_never_followed(
    client: Client, operator: Any, tamper: dict[str, Any]
) -> None:
    EndpointFactory(owner=operator, slug="mine")
    EndpointFactory(slug="theirs")
    registered = flow.register(client)
    auth = flow.authorization(registered["client_id"], "mine")
    fields = flow.form_fields(client.get(auth.url()).content.decode())
    posted = {**fields, "endpoint": "mine", "scopes": ["todos:read"], **tamper}
    posted["redirect_uri"] = "https://evil.example/"

    response = client.post(auth.url(), posted)

    body = assert_oauth_error(response, 400, "invalid_request")
    assert "redirect" in body["error_description"]
    assert "Location" not in response
    assert not Grant.objects.exists() and not granted().exists()


def test_a_registration_update_is_refused_as_a_registration_is(client: Client) -> None:
    from oauth2_provider.models import Application

    registered = flow.register(client)
    uri = registered["registration_client_uri"]
    assert uri == f"{flow.ORIGIN}/oauth/register/{registered['client_id']}/"
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {registered['registration_access_token']}"}
    put = lambda body: client.put(  # noqa: E731
        uri, body, content_type="application/json", **bearer
    )
    base = {"client_name": "Test Chat", "token_endpoint_auth_method": "none"}

    private = put({**base, "redirect_uris": ["https://10.0.0.7/cb"]})
    assert_oauth_error(private, 400, "invalid_redirect_uri")
    machine = put({**base, "redirect_uris": [flow.REDIRECT], "grant_types": ["client_credentials"]})
    assert_oauth_error(machine, 400, "invalid_client_metadata")
    app = Application.objects.get(client_id=registered["client_id"])
    assert app.redirect_uris == flow.REDIRECT
    assert app.authorization_grant_type == Application.GRANT_AUTHORIZATION_CODE

    renamed = put({**base, "client_name": "Renamed Chat", "redirect_uris": [flow.REDIRECT]})
    assert renamed.status_code == 200, renamed.content
    assert Application.objects.get(client_id=registered["client_id"]).name == "Renamed Chat"
    token = renamed.json()["registration_access_token"]  # rotated by each update
    read = client.get(uri, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert read.json()["client_name"] == "Renamed Chat"
    # Without its registration access token even a good update is refused.
    anonymous = client.put(
        uri, {**base, "redirect_uris": [flow.REDIRECT]}, content_type="application/json"
    )
    assert_oauth_error(anonymous, 401, "invalid_token")


def test_a_registration_update_checks_its_token_before_its_body(client: Client) -> None:
    registered = flow.register(client)
    uri = registered["registration_client_uri"]
    private = {"client_name": "Test Chat", "redirect_uris": ["https://10.0.0.7/cb"]}

    # Without a token, or with another client's, a bad body says nothing about the body.
    anonymous = client.put(uri, private, content_type="application/json")
    assert_oauth_error(anonymous, 401, "invalid_token")
    not_json = client.put(uri, b"{", content_type="application/json")
    assert_oauth_error(not_json, 401, "invalid_token")
    other = flow.register(client)
    foreign = client.put(
        uri,
        private,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {other['registration_access_token']}",
    )
    assert_oauth_error(foreign, 401, "invalid_token")
    # With its own token the same body is refused for what it is.
    owned = client.put(
        uri,
        private,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {registered['registration_access_token']}",
    )
    assert_oauth_error(owned, 400, "invalid_redirect_uri")


@pytest.mark.parametrize(
    ("method", "path", "data"),
    [
        ("post", "/oauth/token/", {"grant_type": "authorization_code", "code": "a\x00b"}),
        ("post", "/oauth/token/", {"grant_type": "authorization_code", "client_id": "a\x00b"}),
        ("post", "/oauth/revoke/", {"token": "t", "client_id": "a\x00b"}),
        ("post", "/oauth/token/", {"grant_type": "authorization_code", "a\x00": "named"}),
        ("get", "/oauth/authorize/", {"client_id": "a\x00b", "response_type": "code"}),
    ],
)
def test_a_parameter_the_database_cannot_hold_is_refused_in_json(
    client: Client, operator: Any, method: str, path: str, data: dict[str, str]
) -> None:
    """The toolkit looks clients, codes and tokens up with the values as given: a NUL was the
    database's refusal, a 500 page."""
    assert_oauth_error(getattr(client, method)(path, data), 400, "invalid_request")


@pytest.mark.parametrize(
    "metadata", [{"client_name": "Chat\x00"}, {"redirect_uris": ["http://127.0.0.1:9/\x00"]}]
)
def test_a_registration_the_database_cannot_hold_is_refused_in_json(
    client: Client, metadata: dict[str, Any]
) -> None:
    body = {"redirect_uris": [flow.REDIRECT], "token_endpoint_auth_method": "none", **metadata}
    response = client.post("/oauth/register/", body, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] in (
        "invalid_client_metadata",
        "invalid_redirect_uri",
    )


@pytest.mark.parametrize("path", ["/oauth/token", "/oauth/register", "/oauth/revoke"])
def test_a_post_to_an_endpoint_without_its_slash_is_a_json_404_naming_it(
    path: str,
) -> None:
    strict = Client(enforce_csrf_checks=True)  # as a client without a Board session posts
    response = strict.post(path, {"grant_type": "authorization_code"})
    assert_oauth_error(response, 404, "invalid_request")
    assert f"{path}/" in response.json()["error_description"]
