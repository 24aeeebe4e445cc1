"""An endpoint's OAuth connections are found by their tokens' resource, whoever granted them:
a team's endpoint (no owner of its own) lists the connections its admins granted, every member
sees them, an admin revokes them on the Board as ``manage.py oauth revoke`` does, a plain member
can neither connect the endpoint nor revoke (a connection is a credential, which only a team's
admins vend), a granter who stops managing the endpoint stops connecting it, and the endpoint
page's queries do not grow with its connections."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, RefreshToken

from switchboard import credentials, oauth, teams
from switchboard.lib import oauth_scopes
from switchboard.models import DRAIN_VERBS, Endpoint, Human
from tests.factories import EndpointFactory, HumanFactory
from tests.oauth import flow
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

    response = _client(alice).post(f"/endpoints/team-ep/connections/{application.pk}/revoke")

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

    refused = member.post(f"/endpoints/team-ep/connections/{application.pk}/revoke", follow=True)

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
    assert out.getvalue().startswith("revoked 2 tokens of team-ep")
    assert granted("team-ep").count() == 1  # alice's own client is another connection

    out = StringIO()
    call_command("oauth", "revoke", "--endpoint", "team-ep", "--all", stdout=out)
    assert out.getvalue().startswith("revoked 2 tokens of team-ep")
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
    assert oauth.revoke_connection(one, connected.application_id) == 2

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
    assert "error=invalid_target" in page["Location"]
    assert not granted("team-ep").exists()


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
