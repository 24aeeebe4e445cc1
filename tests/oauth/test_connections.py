"""An endpoint's OAuth connections are found by their tokens' resource, whoever granted them:
a team's endpoint (no owner of its own) lists the connections its admins granted, every member
sees them, an admin revokes them on the Board as ``manage.py oauth revoke`` does, a plain member
can neither connect the endpoint nor revoke (a connection is a credential, which only a team's
admins vend), a granter who stops managing the endpoint stops connecting it, and the endpoint
page's queries do not grow with its connections. Two admins who connect the same client (one
Client ID Metadata Document: one client row for both) are two connections, each with its own
scopes and granter, revoked one at a time."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken

from switchboard import credentials, oauth, teams
from switchboard.lib import oauth_scopes
from switchboard.models import DRAIN_VERBS, Endpoint, Human, SpentCode
from tests.factories import EndpointFactory, HumanFactory
from tests.oauth import flow
from tests.oauth.conftest import MetadataHost
from todos import sweeps

pytestmark = pytest.mark.django_db


def granted(slug: str) -> Any:
    """The access tokens granted for ``slug``'s MCP resource (not DCR's registration tokens)."""
    return AccessToken.objects.filter(resource=[f"{flow.ORIGIN}/mcp/{slug}/oauth"])


def _client(human: Human) -> Client:
    client = Client()
    client.force_login(human)
    return client


@pytest.fixture
def team_endpoint() -> tuple[Endpoint, Human, Human]:
    """Endpoint ``team-ep``, owned by team ``ops`` (no owner of its own): (endpoint, its
    creator alice, carol: both admins). ``erin`` is a plain member."""
    alice = HumanFactory(username="alice")
    carol = HumanFactory(username="carol")
    team = teams.create_team("ops", alice)
    teams.add_member(team, carol, admin=True)
    teams.add_member(team, HumanFactory(username="erin"))
    endpoint, _, _ = credentials.create_endpoint(
        None, team=team, name="Ops agent", slug="team-ep", verbs=list(DRAIN_VERBS)
    )
    assert endpoint.owner_id is None
    return endpoint, alice, carol


def test_a_team_endpoints_connection_is_listed_on_its_page(
    team_endpoint: tuple[Endpoint, Human, Human],
) -> None:
    endpoint, alice, carol = team_endpoint
    flow.sign_in(_client(carol), "team-ep", (oauth_scopes.READ,))

    [listed] = oauth.connections(endpoint)
    assert (listed.client, listed.kind, listed.scopes) == ("Test Chat", oauth.MCP, ("todos:read",))
    assert listed.granted_by == "carol"
    for member in (alice, carol, Human.objects.get(username="erin")):
        page = _client(member).get("/endpoints/team-ep").content.decode()
        assert "Test Chat" in page and "todos:read" in page and "No connections." not in page


def test_a_team_admin_revokes_a_members_connection_on_the_board(
    team_endpoint: tuple[Endpoint, Human, Human],
) -> None:
    _endpoint, alice, carol = team_endpoint
    flow.sign_in(_client(carol), "team-ep")
    application = granted("team-ep").get().application

    response = _client(alice).post(
        f"/endpoints/team-ep/connections/{application.pk}/{carol.pk}/revoke"
    )

    assert response.status_code == 302
    assert not granted("team-ep").exists()
    assert RefreshToken.objects.get(application=application).revoked is not None
    assert "No connections." in _client(alice).get("/endpoints/team-ep").content.decode()


def test_a_plain_member_is_told_only_an_admin_revokes_and_nothing_changes(
    team_endpoint: tuple[Endpoint, Human, Human],
) -> None:
    _endpoint, _alice, carol = team_endpoint
    flow.sign_in(_client(carol), "team-ep")
    application = granted("team-ep").get().application
    member = _client(Human.objects.get(username="erin"))

    refused = member.post(
        f"/endpoints/team-ep/connections/{application.pk}/{carol.pk}/revoke", follow=True
    )

    assert "Only an admin of team ops" in refused.content.decode()
    assert granted("team-ep").exists()
    assert RefreshToken.objects.get(application=application).revoked is None


def test_the_command_revokes_a_team_endpoints_connections(
    team_endpoint: tuple[Endpoint, Human, Human],
) -> None:
    _endpoint, alice, carol = team_endpoint
    first = flow.sign_in(_client(carol), "team-ep")
    flow.sign_in(_client(alice), "team-ep")
    out = StringIO()
    call_command("oauth", "list", "--endpoint", "team-ep", stdout=out)
    assert first["client_id"] in out.getvalue() and "granted by carol" in out.getvalue()

    out = StringIO()
    call_command(
        "oauth", "revoke", "--endpoint", "team-ep", "--client", first["client_id"], stdout=out
    )
    assert out.getvalue() == "revoked 2 tokens of team-ep (1 grant)\n"
    assert granted("team-ep").count() == 1  # alice's own client is another connection

    out = StringIO()
    call_command("oauth", "revoke", "--endpoint", "team-ep", "--all", stdout=out)
    assert out.getvalue() == "revoked 2 tokens of team-ep (1 grant)\n"
    assert not granted("team-ep").exists()


def test_revoking_a_client_on_one_endpoint_leaves_its_connection_to_another(
    client: Client,
) -> None:
    human = HumanFactory(username="ops")
    client.force_login(human)
    one = EndpointFactory(owner=human, slug="one")
    other = EndpointFactory(owner=human, slug="one-two")  # a slug that begins like the other
    registered = flow.register(client)
    for slug in ("one", "one-two"):
        auth = flow.authorization(registered["client_id"], slug)
        code = flow.consent(client, auth, slug)["code"][0]
        assert flow.token(client, auth, code).status_code == 200

    [connected] = oauth.connections(one)
    assert oauth.revoke_connection(one, connected.application_id) == oauth.Revoked(1, 2)

    assert not granted("one").exists() and granted("one-two").exists()
    assert [c.application_id for c in oauth.connections(other)] == [connected.application_id]
    assert oauth.connections(one) == []


def test_the_team_endpoint_page_makes_as_many_queries_for_one_connection_as_for_three(
    team_endpoint: tuple[Endpoint, Human, Human],
    django_assert_num_queries: Callable[..., Any],
) -> None:
    _endpoint, alice, carol = team_endpoint
    admin = _client(alice)
    flow.sign_in(_client(carol), "team-ep")
    # session, user, the endpoint, its keys, its fleet, its claims, its pushes, its OAuth
    # connections (one query, found by resource), the rail's count, the teams it could move into
    with django_assert_num_queries(10):
        admin.get("/endpoints/team-ep")
    flow.sign_in(_client(carol), "team-ep")
    flow.sign_in(admin, "team-ep")

    with django_assert_num_queries(10):
        page = admin.get("/endpoints/team-ep").content.decode()

    assert page.count("/connections/") == 3 and page.count("Test Chat") == 3


def test_a_plain_member_cannot_connect_the_teams_endpoint(
    team_endpoint: tuple[Endpoint, Human, Human],
) -> None:
    member = _client(Human.objects.get(username="erin"))
    registered = flow.register(member)
    auth = flow.authorization(registered["client_id"], "team-ep")

    page = member.get(auth.url())

    assert page.status_code == 302
    query = flow.parse_qs(flow.urlsplit(page["Location"]).query)
    assert query["error"] == ["invalid_target"]
    assert query["error_description"] == [
        "the resource names no endpoint the signed-in operator manages"
    ]
    assert not granted("team-ep").exists()


def test_a_plain_member_is_told_on_the_consent_page_who_connects_an_endpoint(
    team_endpoint: tuple[Endpoint, Human, Human],
) -> None:
    member = _client(Human.objects.get(username="erin"))
    registered = flow.register(member)
    auth = flow.authorization(registered["client_id"], None)  # the client named no endpoint

    page = member.get(auth.url())

    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="consent"' not in html  # no form: nothing to pick
    assert "Only an endpoint's managers connect it: its owner, or a team's admins" in html
    assert '<a href="/endpoints/new">Create one</a>' in html


def test_a_granter_who_stops_administering_the_team_stops_connecting_its_endpoint(
    team_endpoint: tuple[Endpoint, Human, Human],
) -> None:
    endpoint, _alice, carol = team_endpoint
    token = flow.sign_in(_client(carol), "team-ep")["access_token"]
    resource = f"{flow.ORIGIN}/mcp/team-ep/oauth"
    assert oauth.resolve_token(token, resource).endpoint == endpoint

    assert endpoint.team is not None
    teams.set_role(endpoint.team, carol, admin=False)

    with pytest.raises(oauth.TokenRejected):
        oauth.resolve_token(token, resource)


def test_the_sweepers_retention_clears_spent_tokens_and_keeps_live_ones(
    team_endpoint: tuple[Endpoint, Human, Human],
) -> None:
    endpoint, alice, carol = team_endpoint
    flow.sign_in(_client(carol), "team-ep")
    kept = flow.sign_in(_client(alice), "team-ep")
    spent = next(c for c in oauth.connections(endpoint) if c.granted_by == "carol")
    oauth.revoke_connection(endpoint, spent.application_id)
    RefreshToken.objects.filter(revoked__isnull=False).update(
        revoked=timezone.now()
        - timedelta(seconds=settings.SWITCHBOARD_OAUTH_REFRESH_TOKEN_SECONDS + 60)
    )

    sweeps.run_pass(with_retention=True, with_pushes=False)

    assert not RefreshToken.objects.filter(revoked__isnull=False).exists()
    [live] = oauth.connections(endpoint)
    assert live.granted_by == "alice"
    resource = f"{flow.ORIGIN}/mcp/team-ep/oauth"
    assert oauth.resolve_token(kept["access_token"], resource).endpoint == endpoint
    # The record of alice's code stays while its tokens live (a replay of it would revoke
    # them); carol's, whose tokens are revoked, is gone.
    [record] = SpentCode.objects.all()
    assert record.token_family == RefreshToken.objects.get(revoked__isnull=True).token_family


def test_the_sweepers_report_says_how_many_spent_tokens_and_codes_it_cleared(
    team_endpoint: tuple[Endpoint, Human, Human],
) -> None:
    endpoint, alice, carol = team_endpoint
    flow.sign_in(_client(carol), "team-ep")
    spent = next(c for c in oauth.connections(endpoint) if c.granted_by == "carol")
    oauth.revoke_connection(endpoint, spent.application_id)
    past = timezone.now() - timedelta(seconds=settings.SWITCHBOARD_OAUTH_REFRESH_TOKEN_SECONDS + 60)
    RefreshToken.objects.filter(revoked__isnull=False).update(revoked=past)
    # A code alice never exchanged, and the registrations' access tokens, all expired.
    registered = flow.register(_client(alice))
    flow.consent(_client(alice), flow.authorization(registered["client_id"], "team-ep"), "team-ep")
    assert Grant.objects.update(expires=past) == 1
    expired = AccessToken.objects.filter(refresh_token__isnull=True).update(expires=past)
    assert expired == 2  # carol's registration's and alice's

    report = sweeps.run_pass(with_retention=True, with_pushes=False)

    assert report.oauth_cleared == oauth.Cleared(
        access_tokens=2, refresh_tokens=1, codes=1, spent_codes=1
    )
    assert (
        "retention: cleared 2 OAuth access tokens, 1 refresh tokens, 1 authorization codes,"
        " 1 exchanged codes' records" in report.lines()
    )
    assert not AccessToken.objects.exists() and not Grant.objects.exists()
    assert not SpentCode.objects.exists()  # carol's code's: its tokens are revoked
    # The next pass clears nothing, and says nothing about it.
    again = sweeps.run_pass(with_retention=True, with_pushes=False)
    assert again.oauth_cleared == oauth.Cleared(0, 0, 0, 0)
    assert not [line for line in again.lines() if "OAuth" in line]


@pytest.fixture
def shared_client(
    metadata_host: MetadataHost, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> str:
    """The client_id of a chat app known by its Client ID Metadata Document, served on loopback
    and fetched in this process by the consent page (as tests/oauth/test_cimd.py does)."""
    settings.SWITCHBOARD_OAUTH_CIMD_ALLOW_PRIVATE = True
    monkeypatch.setenv("SSL_CERT_FILE", str(metadata_host.ca))
    path = "/clients/shared-chat.json"
    return metadata_host.serve_json(
        path,
        {
            "client_id": metadata_host.url(path),
            "client_name": "Shared Chat",
            "redirect_uris": [flow.REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
    )


def _connect(human: Human, client_id: str, slug: str, scopes: tuple[str, ...]) -> str:
    """``human`` connects the client ``client_id`` to ``slug``'s MCP URL: its access token."""
    client = _client(human)
    auth = flow.authorization(client_id, slug)
    code = flow.consent(client, auth, slug, scopes)["code"][0]
    response = flow.token(client, auth, code)
    assert response.status_code == 200, response.content
    token: str = response.json()["access_token"]
    return token


def test_two_admins_connecting_one_metadata_document_client_are_two_connections(
    team_endpoint: tuple[Endpoint, Human, Human], shared_client: str
) -> None:
    endpoint, alice, carol = team_endpoint
    alices = _connect(alice, shared_client, "team-ep", (oauth_scopes.READ,))
    carols = _connect(carol, shared_client, "team-ep", (oauth_scopes.READ, oauth_scopes.WORK))
    application = Application.objects.get(client_id=shared_client)  # one row for both
    resource = f"{flow.ORIGIN}/mcp/team-ep/oauth"

    rows = sorted(oauth.connections(endpoint), key=lambda c: c.granted_by)

    assert [(c.application_id, c.user_id, c.granted_by, c.scopes) for c in rows] == [
        (application.pk, alice.pk, "alice", ("todos:read",)),
        (application.pk, carol.pk, "carol", ("todos:read", "todos:work")),
    ]
    page = _client(alice).get("/endpoints/team-ep").content.decode()
    assert page.count("Shared Chat") == 2
    revoke_carols = f"/endpoints/team-ep/connections/{application.pk}/{carol.pk}/revoke"
    assert revoke_carols in page
    assert f"/endpoints/team-ep/connections/{application.pk}/{alice.pk}/revoke" in page

    response = _client(alice).post(revoke_carols)

    assert response.status_code == 302
    with pytest.raises(oauth.TokenRejected):
        oauth.resolve_token(carols, resource)
    assert oauth.resolve_token(alices, resource).endpoint == endpoint
    [left] = oauth.connections(endpoint)
    assert (left.granted_by, left.scopes) == ("alice", ("todos:read",))


def test_the_command_revokes_one_granters_connection_of_a_shared_client(
    team_endpoint: tuple[Endpoint, Human, Human], shared_client: str
) -> None:
    _endpoint, alice, carol = team_endpoint
    alices = _connect(alice, shared_client, "team-ep", (oauth_scopes.READ,))
    carols = _connect(carol, shared_client, "team-ep", (oauth_scopes.READ, oauth_scopes.WORK))
    resource = f"{flow.ORIGIN}/mcp/team-ep/oauth"
    out = StringIO()
    call_command("oauth", "list", "--endpoint", "team-ep", stdout=out)
    lines = sorted(out.getvalue().splitlines())
    assert len(lines) == 2
    assert "\ttodos:read\tShared Chat\tgranted by alice\t" in lines[0]
    assert "\ttodos:read todos:work\tShared Chat\tgranted by carol\t" in lines[1]
    revoke = ("oauth", "revoke", "--endpoint", "team-ep", "--client", shared_client)

    out = StringIO()
    call_command(*revoke, "--granter", "carol", stdout=out)

    assert out.getvalue() == "revoked 2 tokens of team-ep (1 grant)\n"
    with pytest.raises(oauth.TokenRejected):
        oauth.resolve_token(carols, resource)
    assert oauth.resolve_token(alices, resource).endpoint.slug == "team-ep"

    # Without --granter: every human's grant of the client, as many as there are.
    _connect(carol, shared_client, "team-ep", (oauth_scopes.READ,))
    out = StringIO()
    call_command(*revoke, stdout=out)
    assert out.getvalue() == "revoked 4 tokens of team-ep (2 grants)\n"
    assert not granted("team-ep").exists()


def test_the_command_refuses_an_unknown_granter_and_a_granter_with_all(
    team_endpoint: tuple[Endpoint, Human, Human], shared_client: str
) -> None:
    _endpoint, alice, _carol = team_endpoint
    _connect(alice, shared_client, "team-ep", (oauth_scopes.READ,))
    revoke = ("oauth", "revoke", "--endpoint", "team-ep")

    with pytest.raises(CommandError, match="no human named 'nobody'"):
        call_command(*revoke, "--client", shared_client, "--granter", "nobody")
    with pytest.raises(CommandError, match="--granter goes with --client"):
        call_command(*revoke, "--all", "--granter", "alice")
    assert granted("team-ep").exists()
