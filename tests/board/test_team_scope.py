"""Teams widen the owner scope (switchboard/scope.py): alice (the team's admin) and carol (a
member) both see and act on the team's todos, on every Board surface; bob, outside the team,
gets exactly what he gets for an unknown id. Only an admin changes the team, vends keys or
moves an endpoint in; each refusal is named and changes nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.test import Client
from django.urls import reverse

from switchboard import credentials, teams
from switchboard.models import Endpoint, EndpointKey, Human, Team, TeamMember
from switchboard.scope import Scope
from tests.base import Personas
from tests.factories import EndpointFactory, HumanFactory, RuleFactory, SourceFactory
from tests.reach import BOT, claimed, new_todo
from todos import queries
from todos.intake.deliveries import plan_for
from todos.models import Todo

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
ACTIONS = ["claim", "complete", "fail", "release", "retry", "extend", "cancel"]
UNKNOWN = "td_aaaaaaaaaaaaaaaaaaaa"
CSRF = re.compile(rb'"X-CSRFToken": "[^"]+"|name="csrfmiddlewaretoken" value="[^"]+"')


@dataclass(frozen=True)
class Ops:
    team: Team
    carol: Human
    endpoint: Endpoint
    alice: Client
    carol_client: Client
    bob: Client


def _client(human: Human) -> Client:
    client = Client()
    client.force_login(human)
    return client


@pytest.fixture
def ops(personas: Personas) -> Ops:
    carol = HumanFactory(username="carol")
    team = teams.create_team("ops", personas.alice)
    teams.add_member(team, carol)
    endpoint, _, _ = credentials.create_endpoint(
        None, team=team, name="Ops agent", slug="agent-t", verbs=["list_todos"]
    )
    return Ops(
        team, carol, endpoint, _client(personas.alice), _client(carol), _client(personas.bob)
    )


def same_page(body: bytes, todo_id: str) -> bytes:
    return CSRF.sub(b"CSRF", body.replace(todo_id.encode(), b"ID"))


# --- seeing ---------------------------------------------------------------------------------


def test_both_members_list_the_teams_todos_and_an_outsider_lists_none(ops: Ops) -> None:
    todo = new_todo(ops.endpoint.id, "work", title="the team's task")

    for member in (ops.alice, ops.carol_client):
        body = member.get(reverse("todo_list")).content.decode()
        assert todo.id in body and "agent-t" in body
        by_slug = member.get(reverse("todo_list"), {"endpoint": "agent-t"}).content.decode()
        assert todo.id in by_slug
    outsider = ops.bob.get(reverse("todo_list")).content.decode()
    by_slug = ops.bob.get(reverse("todo_list"), {"endpoint": "agent-t"}).content.decode()
    assert todo.id not in outsider and todo.id not in by_slug
    assert "all 0</span>" in outsider and "agent-t" not in outsider


@pytest.mark.parametrize("htmx", [False, True])
def test_the_todo_page_is_the_members_and_reads_as_unknown_to_an_outsider(
    ops: Ops, htmx: bool
) -> None:
    todo = new_todo(ops.endpoint.id, "work", title="the team's secret task")
    headers = HTMX if htmx else {}

    for member in (ops.alice, ops.carol_client):
        assert member.get(reverse("todo_detail", args=[todo.id]), **headers).status_code == 200
    foreign = ops.bob.get(reverse("todo_detail", args=[todo.id]), **headers)
    unknown = ops.bob.get(reverse("todo_detail", args=[UNKNOWN]), **headers)
    assert foreign.status_code == unknown.status_code == 404
    assert b"secret task" not in foreign.content
    assert same_page(foreign.content, todo.id) == same_page(unknown.content, UNKNOWN)


def test_every_read_in_a_members_scope_holds_the_teams_todos(ops: Ops, personas: Personas) -> None:
    todo = new_todo(ops.endpoint.id, "work")
    for human, sees in ((personas.alice, True), (ops.carol, True), (personas.bob, False)):
        scope = Scope.of_human(human.id)
        page = queries.todo_page(scope, queries.TodoFilters(), None)
        assert (todo.id in [t.id for t in page.todos]) is sees
        assert queries.state_counts(scope, queries.TodoFilters())["all"] == (1 if sees else 0)
        assert Todo.objects.filter(scope.todos(), pk=todo.id).exists() is sees
        assert Endpoint.objects.filter(scope.endpoints(), pk=ops.endpoint.pk).exists() is sees


# --- acting ---------------------------------------------------------------------------------


def test_both_members_act_on_the_teams_todos_and_the_activity_names_who_acted(
    ops: Ops, personas: Personas
) -> None:
    by_carol = new_todo(ops.endpoint.id, "work", title="carol cancels this")
    by_alice = new_todo(ops.endpoint.id, "work", title="alice cancels this")

    for client, todo in ((ops.carol_client, by_carol), (ops.alice, by_alice)):
        response = client.post(
            reverse("todo_action", args=[todo.id, "cancel"]), {"reason": "dup"}, **HTMX
        )
        assert response.status_code == 200, response.content[:300]
        assert Todo.objects.get(pk=todo.id).state == "canceled"

    # Each sees the other's act on the feed and on the trail, by the person's name.
    feed = ops.alice.get(reverse("activity")).content.decode()
    assert "carol cancels this" in feed and ">carol<" in feed
    trail = ops.alice.get(reverse("todo_detail", args=[by_carol.id])).content.decode()
    assert "carol" in trail
    trail = ops.carol_client.get(reverse("todo_detail", args=[by_alice.id])).content.decode()
    assert "alice" in trail
    assert "cancels this" not in ops.bob.get(reverse("activity")).content.decode()


@pytest.mark.parametrize("action", ACTIONS)
def test_an_outsiders_every_action_on_a_teams_todo_is_not_found_and_changes_nothing(
    ops: Ops, action: str
) -> None:
    todo_id = claimed(ops.endpoint.id, "work", owner=BOT, claimant="harness/run-1").todo.id
    before = Todo.objects.values().get(id=todo_id)

    response = ops.bob.post(
        reverse("todo_action", args=[todo_id, action]), {"retryable": "on"}, **HTMX
    )

    assert response.status_code == 404
    assert "not found" in response.content.decode()
    assert Todo.objects.values().get(id=todo_id) == before


# --- the endpoint's pages -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "name"),
    [
        ("get", "endpoint_detail"),
        ("get", "endpoint_revoke"),
        ("post", "endpoint_revoke"),
        ("post", "endpoint_mint_key"),
        ("post", "endpoint_move"),
    ],
)
def test_an_outsider_gets_404_for_the_teams_endpoint_pages(
    ops: Ops, method: str, name: str
) -> None:
    keys = EndpointKey.objects.filter(endpoint=ops.endpoint).count()

    response = getattr(ops.bob, method)(reverse(name, args=["agent-t"]), {"confirm": "yes"})

    assert response.status_code == 404
    ops.endpoint.refresh_from_db()
    assert ops.endpoint.revoked_at is None and ops.endpoint.team_id == ops.team.pk
    assert EndpointKey.objects.filter(endpoint=ops.endpoint).count() == keys


def test_a_member_sees_the_endpoint_but_only_an_admin_vends_or_revokes(ops: Ops) -> None:
    keys = EndpointKey.objects.filter(endpoint=ops.endpoint).count()
    page = ops.carol_client.get(reverse("endpoint_detail", args=["agent-t"]))
    assert page.status_code == 200 and b"team" in page.content

    refused = ops.carol_client.post(reverse("endpoint_mint_key", args=["agent-t"]), follow=True)
    assert "Only an admin of team ops" in refused.content.decode()
    revoke = ops.carol_client.post(
        reverse("endpoint_revoke", args=["agent-t"]), {"confirm": "yes"}, follow=True
    )
    assert "Only an admin of team ops" in revoke.content.decode()
    ops.endpoint.refresh_from_db()
    assert ops.endpoint.revoked_at is None
    assert EndpointKey.objects.filter(endpoint=ops.endpoint).count() == keys

    minted = ops.alice.post(reverse("endpoint_mint_key", args=["agent-t"]))
    assert minted.status_code == 302
    assert EndpointKey.objects.filter(endpoint=ops.endpoint).count() == keys + 1


def test_the_endpoint_lists_show_the_teams_endpoint_to_members_only(ops: Ops) -> None:
    for member in (ops.alice, ops.carol_client):
        assert "agent-t" in member.get(reverse("endpoint_list")).content.decode()
    assert "agent-t" not in ops.bob.get(reverse("endpoint_list")).content.decode()


# --- moving an endpoint into a team ---------------------------------------------------------


def test_an_admin_moves_her_endpoint_in_and_the_member_then_sees_its_todos(
    ops: Ops, personas: Personas
) -> None:
    todo = new_todo(personas.endpoint_a.id, "work")
    assert todo.id not in ops.carol_client.get(reverse("todo_list")).content.decode()

    moved = ops.alice.post(reverse("endpoint_move", args=["agent-a"]), {"team": "ops"}, follow=True)

    assert "Moved agent-a to team ops" in moved.content.decode()
    personas.endpoint_a.refresh_from_db()
    assert personas.endpoint_a.team_id == ops.team.pk and personas.endpoint_a.owner_id is None
    assert todo.id in ops.carol_client.get(reverse("todo_list")).content.decode()
    assert todo.id not in ops.bob.get(reverse("todo_list")).content.decode()


def test_a_move_by_a_human_who_does_not_administer_the_team_is_refused(
    ops: Ops, personas: Personas
) -> None:
    carols = EndpointFactory(owner=ops.carol, slug="agent-c")
    # carol owns her endpoint but is only a member of ops; bob is not even a member.
    for client, slug, who in ((ops.carol_client, "agent-c", "carol"), (ops.bob, "agent-b", "bob")):
        response = client.post(reverse("endpoint_move", args=[slug]), {"team": "ops"}, follow=True)
        assert f"Not moved: {who} does not administer team ops" in response.content.decode()
    carols.refresh_from_db()
    personas.endpoint_b.refresh_from_db()
    assert carols.owner_id == ops.carol.pk and carols.team_id is None
    assert personas.endpoint_b.owner_id == personas.bob.pk and personas.endpoint_b.team_id is None


def test_a_move_of_an_endpoint_the_mover_does_not_manage_is_refused(ops: Ops) -> None:
    other = teams.create_team("other", ops.carol)  # carol administers "other" only
    with pytest.raises(teams.TeamRefused) as refused:
        credentials.move_endpoint(ops.endpoint, other, by=ops.carol)
    assert refused.value.code == "not_manager"
    ops.endpoint.refresh_from_db()
    assert ops.endpoint.team_id == ops.team.pk


# --- the team pages -------------------------------------------------------------------------


def test_a_team_page_is_its_members_and_unknown_to_anyone_else(ops: Ops) -> None:
    for member in (ops.alice, ops.carol_client):
        page = member.get(reverse("team_detail", args=["ops"]))
        assert page.status_code == 200 and b"carol" in page.content and b"agent-t" in page.content
    foreign = ops.bob.get(reverse("team_detail", args=["ops"]))
    unknown = ops.bob.get(reverse("team_detail", args=["no-such"]))
    assert foreign.status_code == unknown.status_code == 404
    for name in ("team_add", "team_remove", "team_role"):
        response = ops.bob.post(reverse(name, args=["ops"]), {"username": "bob", "role": "admin"})
        assert response.status_code == 404
    assert not TeamMember.objects.filter(human__username="bob").exists()


def test_an_admin_creates_a_team_and_adds_a_member_by_username(ops: Ops) -> None:
    created = ops.bob.post(reverse("teams"), {"name": "bobs-team"})
    assert created.status_code == 302
    added = ops.bob.post(
        reverse("team_add", args=["bobs-team"]), {"username": "carol", "role": "member"}
    )
    assert added.status_code == 302
    assert set(
        TeamMember.objects.filter(team__name="bobs-team").values_list("human__username", "role")
    ) == {("bob", "admin"), ("carol", "member")}


def test_the_team_pages_refuse_by_name_and_change_nothing(ops: Ops) -> None:
    before = set(TeamMember.objects.values_list("team_id", "human_id", "role"))

    bad = ops.bob.post(reverse("teams"), {"name": "Not A Slug"}, follow=True)
    assert "team name" in bad.content.decode() and not Team.objects.filter(name="Not A Slug")
    taken = ops.bob.post(reverse("teams"), {"name": "ops"}, follow=True)
    assert "exists" in taken.content.decode()
    twice = ops.alice.post(
        reverse("team_add", args=["ops"]), {"username": "carol"}, follow=True
    ).content.decode()
    assert "carol is already a member of team ops" in twice
    last = ops.alice.post(
        reverse("team_remove", args=["ops"]), {"username": "alice"}, follow=True
    ).content.decode()
    assert "alice is the last admin of team ops" in last
    by_member = ops.carol_client.post(
        reverse("team_add", args=["ops"]), {"username": "bob"}, follow=True
    ).content.decode()
    assert "Only an admin of team ops manages its members" in by_member

    assert set(TeamMember.objects.values_list("team_id", "human_id", "role")) == before


# --- sources ---------------------------------------------------------------------------------


def test_a_teams_source_is_its_members_and_routes_to_the_teams_endpoints(
    ops: Ops, personas: Personas
) -> None:
    source = SourceFactory(owner=None, team=ops.team, slug="ops-hooks")
    to_team = RuleFactory(source=source, endpoint=ops.endpoint, queue="q")
    to_alice = RuleFactory(source=source, endpoint=personas.endpoint_a, queue="q")

    for member in (ops.alice, ops.carol_client):
        assert member.get(reverse("source_detail", args=["ops-hooks"])).status_code == 200
    assert ops.bob.get(reverse("source_detail", args=["ops-hooks"])).status_code == 404
    # A team's source routes to the team's endpoints only, not to a member's own.
    plan = plan_for(source, {}, {})
    errors = {entry["rule_id"]: entry.get("error") for entry in plan.trace}
    assert errors[to_team.id] is None and errors[to_alice.id] is not None
    assert len(plan.todos) == 1
