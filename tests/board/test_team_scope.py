"""Teams widen the owner scope (switchboard/scope.py): alice (the team's admin) and carol (a
member) both see and act on the team's todos, sources, schedules and alert channels, on every
Board surface and in the commands' scope; bob, outside the team, gets exactly what he gets for
an unknown id, and nothing changes; the last test probes the surfaces the others do not (the
Overview, search, bulk counts and actions, queue pauses and limits, a traced todo's spans,
``manage.py todos``), each against the same question about an unknown id. Only an admin changes
the team, vends keys, changes a push URL or moves an endpoint, a source or a channel in; each
refusal is named and changes nothing."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from activity.models import TodoActivity
from alerts import channels, evaluate, sweep
from alerts.models import Alert, AlertChannel, AlertDelivery, RuleKind
from otlp.store import store
from otlp.translate import collect, translate
from switchboard import credentials, teams
from switchboard.lib.sql import fetch_all
from switchboard.models import Endpoint, EndpointKey, Human, Team, TeamMember
from switchboard.scope import Scope
from tests.base import Personas
from tests.factories import EndpointFactory, HumanFactory, RuleFactory, SourceFactory
from tests.otlp.helpers import SpanSpec, claimed_with_trace, request, trace_id
from tests.reach import BOT, claimed, new_todo
from todos import lifecycle, overview, queries, schedules
from todos.intake import sources
from todos.intake.deliveries import plan_for
from todos.models import Event, QueuePause, QueueSettings, Rule, Schedule, Source, Todo

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


def run_command(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


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


def _new_todo(endpoint: str, title: str) -> dict[str, str]:
    return {"endpoint": endpoint, "queue": "work", "title": title, "max_attempts": "3"}


def _endpoint_error(response: Any) -> str:
    found = re.search(
        r'<ul class="errorlist" id="id_endpoint_error">(.*?)</ul>', response.content.decode(), re.S
    )
    assert found is not None, "no error at the endpoint"
    return html.unescape(found[1])


def test_members_create_a_todo_on_the_teams_endpoint_and_an_outsiders_is_unknown(
    ops: Ops,
) -> None:
    for member in (ops.alice, ops.carol_client):
        assert 'value="agent-t"' in member.get(reverse("todo_new")).content.decode()
    made = ops.carol_client.post(reverse("todo_new"), _new_todo("agent-t", "carol's new task"))

    todo = Todo.objects.get(endpoint=ops.endpoint)
    assert made.status_code == 302 and made["Location"] == f"/todos/{todo.id}"
    assert todo.title == "carol's new task"

    assert "agent-t" not in ops.bob.get(reverse("todo_new")).content.decode()
    foreign = ops.bob.post(reverse("todo_new"), _new_todo("agent-t", "bob's try"))
    unknown = ops.bob.post(reverse("todo_new"), _new_todo("no-such", "bob's try"))
    assert foreign.status_code == unknown.status_code == 200
    assert "Select a valid choice" in _endpoint_error(foreign)
    assert _endpoint_error(foreign).replace("agent-t", "X") == _endpoint_error(unknown).replace(
        "no-such", "X"
    )
    assert list(Todo.objects.values_list("id", flat=True)) == [todo.id]


# --- the endpoint's pages -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "name"),
    [
        ("get", "endpoint_detail"),
        ("get", "endpoint_revoke"),
        ("post", "endpoint_revoke"),
        ("post", "endpoint_mint_key"),
        ("get", "endpoint_move"),
        ("post", "endpoint_move"),
        ("post", "endpoint_push_url"),
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
    assert (ops.endpoint.push_url, ops.endpoint.push_secret) == (None, "")
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


def test_only_an_admin_changes_the_push_url_and_a_member_is_not_shown_the_field(
    ops: Ops,
) -> None:
    form = f'action="{reverse("endpoint_push_url", args=["agent-t"])}"'
    page = reverse("endpoint_detail", args=["agent-t"])
    assert form in ops.alice.get(page).content.decode()
    assert form not in ops.carol_client.get(page).content.decode()

    # A member's post sets nothing, mints no push secret and shows none.
    refused = ops.carol_client.post(
        reverse("endpoint_push_url", args=["agent-t"]),
        {"push_url": "https://agent.example/ring"},
        follow=True,
    ).content.decode()
    assert "Only an admin of team ops" in refused and "push URL" in refused
    assert "sbp_" not in refused
    ops.endpoint.refresh_from_db()
    assert (ops.endpoint.push_url, ops.endpoint.push_secret) == (None, "")

    # The admin sets it (its first push secret shown once); the member cannot clear it.
    shown = ops.alice.post(
        reverse("endpoint_push_url", args=["agent-t"]),
        {"push_url": "https://agent.example/ring"},
        follow=True,
    ).content.decode()
    ops.endpoint.refresh_from_db()
    assert ops.endpoint.push_url == "https://agent.example/ring"
    assert ops.endpoint.push_secret and ops.endpoint.push_secret in shown
    ops.carol_client.post(reverse("endpoint_push_url", args=["agent-t"]), {"push_url": ""})
    after = Endpoint.objects.get(pk=ops.endpoint.pk)
    assert (after.push_url, after.push_secret) == (ops.endpoint.push_url, ops.endpoint.push_secret)
    member_page = ops.carol_client.get(page).content.decode()
    assert form not in member_page and "https://agent.example/ring" in member_page


def test_a_members_endpoint_page_offers_none_of_an_admins_changes(ops: Ops) -> None:
    ops.alice.post(
        reverse("endpoint_push_url", args=["agent-t"]), {"push_url": "https://agent.example/r"}
    )
    page = reverse("endpoint_detail", args=["agent-t"])
    admin_only = [
        f'action="{reverse("endpoint_mint_key", args=["agent-t"])}"',
        f'href="{reverse("endpoint_revoke", args=["agent-t"])}"',
        f'action="{reverse("endpoint_rotate_push_secret", args=["agent-t"])}"',
        'action="/endpoints/agent-t/keys/',
    ]
    by_admin = ops.alice.get(page).content.decode()
    by_member = ops.carol_client.get(page).content.decode()

    assert all(form in by_admin for form in admin_only)
    assert not any(form in by_member for form in admin_only)
    assert "An admin of team ops vends and revokes its keys" in by_member
    assert "An admin of team ops" not in by_admin


def test_the_endpoint_lists_show_the_teams_endpoint_to_members_only(ops: Ops) -> None:
    for member in (ops.alice, ops.carol_client):
        assert "agent-t" in member.get(reverse("endpoint_list")).content.decode()
    assert "agent-t" not in ops.bob.get(reverse("endpoint_list")).content.decode()


# --- moving an endpoint into a team ---------------------------------------------------------


def _text(response: Any) -> str:
    """A page's text with its tags dropped and its spaces run together, as it reads."""
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())
    return re.sub(r"\( | (?=[?.,:;)])", lambda m: m[0].strip(), text)


def test_an_admin_moves_her_endpoint_in_after_confirming_and_the_member_then_sees_its_todos(
    ops: Ops, personas: Personas
) -> None:
    todo = new_todo(personas.endpoint_a.id, "work")
    move = reverse("endpoint_move", args=["agent-a"])
    page = ops.alice.get(reverse("endpoint_detail", args=["agent-a"])).content.decode()
    assert f'action="{move}"' in page and "Move…" in page
    assert todo.id not in ops.carol_client.get(reverse("todo_list")).content.decode()

    # The page's button (a POST without confirm) and a GET ask, saying what moves and to whom.
    for asked in (ops.alice.post(move, {"team": "ops"}), ops.alice.get(move, {"team": "ops"})):
        assert asked.status_code == 200
        said = _text(asked)
        assert "Move agent-a to team ops?" in said
        assert "its 1 live key" in said and "its 1 todo (1 unfinished)" in said
        assert "Every member of team ops then sees and acts on its todos" in said
        assert "alice, carol" in said and "Its admins (alice) also manage it" in said
        assert "It is no longer alice's own" in said
        assert "It cannot be moved back to a person" in said
        assert 'name="confirm" value="yes"' in asked.content.decode()
        assert 'name="team" value="ops"' in asked.content.decode()
        personas.endpoint_a.refresh_from_db()
        assert (personas.endpoint_a.owner_id, personas.endpoint_a.team_id) == (
            personas.alice.pk,
            None,
        )
    assert todo.id not in ops.carol_client.get(reverse("todo_list")).content.decode()

    moved = ops.alice.post(move, {"team": "ops", "confirm": "yes"}, follow=True)

    assert "Moved agent-a to team ops" in moved.content.decode()
    personas.endpoint_a.refresh_from_db()
    assert personas.endpoint_a.team_id == ops.team.pk and personas.endpoint_a.owner_id is None
    assert todo.id in ops.carol_client.get(reverse("todo_list")).content.decode()
    assert todo.id not in ops.bob.get(reverse("todo_list")).content.decode()


def test_moving_an_endpoint_from_one_team_to_another_names_who_loses_it_and_what_stops(
    ops: Ops, personas: Personas
) -> None:
    other = teams.create_team("other", personas.alice)  # alice administers both; carol is ops'
    source = SourceFactory(owner=None, team=ops.team, slug="ops-hooks")
    RuleFactory(source=source, endpoint=ops.endpoint, queue="q")

    asked = _text(ops.alice.post(reverse("endpoint_move", args=["agent-t"]), {"team": "other"}))

    assert "Move agent-t to team other?" in asked
    assert "Team ops no longer owns it: carol no longer sees it or its todos" in asked
    assert "1 rule of team ops's sources routes to it and stops creating todos" in asked
    ops.endpoint.refresh_from_db()
    assert ops.endpoint.team_id == ops.team.pk

    ops.alice.post(reverse("endpoint_move", args=["agent-t"]), {"team": "other", "confirm": "yes"})
    ops.endpoint.refresh_from_db()
    assert ops.endpoint.team_id == other.pk


def test_a_move_by_a_human_who_does_not_administer_the_team_is_refused(
    ops: Ops, personas: Personas
) -> None:
    carols = EndpointFactory(owner=ops.carol, slug="agent-c")
    # carol owns her endpoint but is only a member of ops; bob is not even a member. Refused
    # as before, whether asked (a GET, a POST without confirm) or confirmed: never a question.
    for client, slug, who in ((ops.carol_client, "agent-c", "carol"), (ops.bob, "agent-b", "bob")):
        move = reverse("endpoint_move", args=[slug])
        for response in (
            client.post(move, {"team": "ops"}, follow=True),
            client.get(move, {"team": "ops"}, follow=True),
            client.post(move, {"team": "ops", "confirm": "yes"}, follow=True),
        ):
            assert response.redirect_chain == [(reverse("endpoint_detail", args=[slug]), 302)]
            assert f"Not moved: {who} does not administer team ops" in response.content.decode()
            assert "cannot be moved back" not in response.content.decode()
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
    for asked in ({"username": "carol"}, {"username": "carol", "confirm": "yes"}):
        assert ops.bob.get(reverse("team_remove", args=["ops"]), asked).status_code == 404
        assert ops.bob.post(reverse("team_remove", args=["ops"]), asked).status_code == 404
    assert TeamMember.objects.filter(team=ops.team, human=ops.carol).exists()
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
    # The last admin is refused whether asked or confirmed: never a question.
    for confirm in ({}, {"confirm": "yes"}):
        last = ops.alice.post(
            reverse("team_remove", args=["ops"]), {"username": "alice", **confirm}, follow=True
        ).content.decode()
        assert "alice is the last admin of team ops" in last and "Yes, remove" not in last
    unknown = ops.alice.get(
        reverse("team_remove", args=["ops"]), {"username": "bob"}, follow=True
    ).content.decode()
    assert "No such member." in unknown and "Yes, remove" not in unknown
    for asked in ({}, {"confirm": "yes"}):
        by_member = ops.carol_client.post(
            reverse("team_remove", args=["ops"]), {"username": "alice", **asked}, follow=True
        ).content.decode()
        assert "Only an admin of team ops manages its members" in by_member
    by_member = ops.carol_client.post(
        reverse("team_add", args=["ops"]), {"username": "bob"}, follow=True
    ).content.decode()
    assert "Only an admin of team ops manages its members" in by_member

    assert set(TeamMember.objects.values_list("team_id", "human_id", "role")) == before


def test_an_admin_removes_a_member_after_confirming_and_is_told_what_they_lose(
    ops: Ops, personas: Personas
) -> None:
    SourceFactory(owner=None, team=ops.team, slug="ops-hooks")
    channels.add_channel(None, team=ops.team, email="ops@example.com")
    remove = reverse("team_remove", args=["ops"])
    page = ops.alice.get(reverse("team_detail", args=["ops"])).content.decode()
    assert f'action="{remove}"' in page and "Remove…" in page

    # The members table's button (a POST without confirm) and a GET ask, saying what goes.
    for asked in (
        ops.alice.post(remove, {"username": "carol"}),
        ops.alice.get(remove, {"username": "carol"}),
    ):
        assert asked.status_code == 200
        said = _text(asked)
        assert "Remove carol from team ops?" in said
        assert "carol loses access to everything team ops owns" in said
        assert "1 endpoint (agent-t) with their todos" in said
        assert "1 source (ops-hooks)" in said and "1 alert channel" in said
        assert "Pages carol has open now stop showing the team's changes" in said
        assert "Endpoints and sources carol owns personally are not touched" in said
        assert 'name="username" value="carol"' in asked.content.decode()
        assert TeamMember.objects.filter(team=ops.team, human=ops.carol).exists()
    assert ops.carol_client.get(reverse("endpoint_detail", args=["agent-t"])).status_code == 200

    removed = ops.alice.post(remove, {"username": "carol", "confirm": "yes"}, follow=True)

    assert "Removed carol from team ops." in removed.content.decode()
    assert not TeamMember.objects.filter(team=ops.team, human=ops.carol).exists()
    assert ops.carol_client.get(reverse("endpoint_detail", args=["agent-t"])).status_code == 404


def test_an_admin_removing_herself_is_told_she_cannot_come_back_alone(
    ops: Ops, personas: Personas
) -> None:
    teams.set_role(ops.team, ops.carol, admin=True)  # so alice is not the last admin
    remove = reverse("team_remove", args=["ops"])

    said = _text(ops.alice.post(remove, {"username": "alice"}))

    assert "Remove yourself from team ops?" in said and "You lose access" in said
    assert "you no longer manage its members" in said
    assert "You cannot add yourself back" in said
    assert TeamMember.objects.filter(team=ops.team, human=personas.alice).exists()
    gone = ops.alice.post(remove, {"username": "alice", "confirm": "yes"})
    assert gone["Location"] == reverse("teams")
    assert not TeamMember.objects.filter(team=ops.team, human=personas.alice).exists()


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


def _source_row(slug: str) -> dict[str, object]:
    return Source.objects.values().get(slug=slug)


def test_an_admin_makes_a_source_for_the_team_and_a_member_who_did_not_manages_it(
    ops: Ops, personas: Personas
) -> None:
    form = ops.alice.get(reverse("source_new")).content.decode()
    assert '<option value="ops">team ops</option>' in form

    made = ops.alice.post(
        reverse("source_new"), {"slug": "ops-new", "verify": "on", "owned_by": "ops"}
    )

    assert made.status_code == 302
    source = Source.objects.get(slug="ops-new")
    assert (source.owner_id, source.team_id) == (None, ops.team.pk)
    listed = ops.carol_client.get(reverse("sources")).content.decode()
    assert 'href="/sources/ops-new"' in listed and 'team <span class="mono">ops</span>' in listed
    page = ops.carol_client.get(reverse("source_detail", args=["ops-new"])).content.decode()
    assert re.search(r'class="owned-by">team <a href="/teams/ops"', page)
    # carol, a member who did not make it, rotates its secret, adds a rule and switches it off.
    fingerprint = sources.secret_fingerprint(source.secret)
    rotated = ops.carol_client.post(
        reverse("source_rotate", args=["ops-new"]), {"confirm": "yes", "current": fingerprint}
    )
    assert rotated.status_code == 302
    assert Source.objects.get(slug="ops-new").secret != source.secret
    rule = RuleFactory(source=source, endpoint=ops.endpoint, queue="q")
    off = ops.carol_client.post(reverse("rule_disable", args=["ops-new", rule.pk]))
    assert off.status_code == 302 and not Rule.objects.get(pk=rule.pk).enabled
    ops.carol_client.post(reverse("source_verify", args=["ops-new"]), {"verify": "off"})
    assert not Source.objects.get(slug="ops-new").verify
    assert "ops-new" not in ops.bob.get(reverse("sources")).content.decode()


@pytest.mark.parametrize("who", ["carol", "bob"])
def test_a_source_for_a_team_one_does_not_administer_is_refused_and_nothing_made(
    ops: Ops, who: str
) -> None:
    client = ops.carol_client if who == "carol" else ops.bob
    assert 'value="ops"' not in client.get(reverse("source_new")).content.decode()

    refused = client.post(
        reverse("source_new"), {"slug": "sneaky", "verify": "on", "owned_by": "ops"}
    )

    assert refused.status_code == 200
    assert "Select a valid choice" in refused.content.decode()
    assert not Source.objects.filter(slug="sneaky").exists()


@pytest.mark.parametrize(
    ("method", "name", "extra"),
    [
        ("get", "source_detail", ()),
        ("get", "source_secret_shown", ()),
        ("post", "source_rotate", ()),
        ("post", "source_verify", ()),
        ("get", "source_test", ()),
        ("post", "source_test", ()),
        ("get", "source_move", ()),
        ("post", "source_move", ()),
        ("get", "rule_new", ()),
        ("post", "rule_new", ()),
        ("get", "rule_edit", ("rule",)),
        ("post", "rule_edit", ("rule",)),
        ("post", "rule_delete", ("rule",)),
        ("post", "rule_disable", ("rule",)),
        ("get", "source_event", ("event",)),
    ],
)
def test_an_outsider_gets_404_for_every_page_of_a_teams_source_and_nothing_changes(
    ops: Ops, personas: Personas, method: str, name: str, extra: tuple[str, ...]
) -> None:
    source = SourceFactory(owner=None, team=ops.team, slug="ops-hooks")
    rule = RuleFactory(source=source, endpoint=ops.endpoint, queue="q")
    event = Event.objects.create(source=source, delivery_id="d-1", disposition="dropped")
    ids = {"rule": rule.pk, "event": event.pk}
    before = (_source_row("ops-hooks"), list(Rule.objects.values()), Event.objects.count())
    data = {
        "confirm": "yes",
        "current": sources.secret_fingerprint(source.secret),
        "verify": "off",
        "team": "bobs",
        "queue": "stolen",
        "endpoint": str(personas.endpoint_b.id),
        "headers": "{}",
        "payload": "{}",
    }
    teams.create_team("bobs", personas.bob)  # a team bob administers, to move it into

    response = getattr(ops.bob, method)(
        reverse(name, args=["ops-hooks", *(ids[e] for e in extra)]), data
    )

    assert response.status_code == 404
    after = (_source_row("ops-hooks"), list(Rule.objects.values()), Event.objects.count())
    assert after == before


def test_an_admin_moves_her_source_into_the_team_from_its_page(
    ops: Ops, personas: Personas, django_assert_num_queries: Callable[..., Any]
) -> None:
    SourceFactory(owner=personas.alice, slug="alice-hooks")
    assert ops.carol_client.get(reverse("source_detail", args=["alice-hooks"])).status_code == 404
    # session, user, the source (with whether she manages it and the teams she administers),
    # its rules, its events, the rail's unread count: as many as for a human in no team
    with django_assert_num_queries(6):
        page = ops.alice.get(reverse("source_detail", args=["alice-hooks"])).content.decode()
    assert 'class="owned-by">alice<' in page and '<option value="ops">ops</option>' in page

    to_team = RuleFactory(
        source=Source.objects.get(slug="alice-hooks"), endpoint=ops.endpoint, queue="q"
    )
    to_alice = RuleFactory(
        source=to_team.source, endpoint=personas.endpoint_a, queue="mine", name="alice's"
    )
    move = reverse("source_move", args=["alice-hooks"])

    # The page's button (a POST without confirm) and a GET ask, saying what moves and to whom.
    for asked in (ops.alice.post(move, {"team": "ops"}), ops.alice.get(move, {"team": "ops"})):
        assert asked.status_code == 200
        said = _text(asked)
        assert "Move alice-hooks to team ops?" in said and "its 2 rules" in said
        assert (
            "Every member of team ops then sees and manages it" in said and "alice, carol" in said
        )
        assert "1 rule routes to an endpoint team ops does not own" in said
        assert f"{to_alice.label} → agent-a / mine" in said and "agent-t / q" not in said
        assert "It cannot be moved back to a person" in said
        row = _source_row("alice-hooks")
        assert (row["owner_id"], row["team_id"]) == (personas.alice.pk, None)
    assert ops.carol_client.get(reverse("source_detail", args=["alice-hooks"])).status_code == 404

    moved = ops.alice.post(move, {"team": "ops", "confirm": "yes"}, follow=True)

    assert "Moved alice-hooks to team ops" in moved.content.decode()
    row = _source_row("alice-hooks")
    assert (row["owner_id"], row["team_id"]) == (None, ops.team.pk)
    assert ops.carol_client.get(reverse("source_detail", args=["alice-hooks"])).status_code == 200
    assert ops.bob.get(reverse("source_detail", args=["alice-hooks"])).status_code == 404


def test_a_source_move_is_refused_by_name_and_changes_nothing(ops: Ops, personas: Personas) -> None:
    SourceFactory(owner=ops.carol, slug="carol-hooks")
    SourceFactory(owner=None, team=ops.team, slug="ops-hooks")
    teams.create_team("other", ops.carol)  # carol administers "other" only
    before = {s: _source_row(s) for s in ("carol-hooks", "ops-hooks")}
    # A member sees the team's source but does not manage it: no move offered.
    page = ops.carol_client.get(reverse("source_detail", args=["ops-hooks"])).content.decode()
    assert 'id="move"' not in page

    for client, slug, team, said in (
        (ops.carol_client, "carol-hooks", "ops", "carol does not administer team ops"),
        (ops.carol_client, "ops-hooks", "other", "carol does not own or administer ops-hooks"),
        (ops.alice, "ops-hooks", "no-such", "alice does not administer team 'no-such'"),
        (ops.alice, "ops-hooks", "ops", "ops-hooks already belongs to team ops"),
    ):
        move = reverse("source_move", args=[slug])
        for response in (
            client.post(move, {"team": team}, follow=True),
            client.get(move, {"team": team}, follow=True),
            client.post(move, {"team": team, "confirm": "yes"}, follow=True),
        ):
            assert response.redirect_chain == [(reverse("source_detail", args=[slug]), 302)]
            assert f"Not moved: {said}" in html.unescape(response.content.decode())

    assert {s: _source_row(s) for s in before} == before


# --- schedules: owned through their endpoint -----------------------------------------------


def _teams_schedule(ops: Ops) -> Schedule:
    return schedules.add(
        ops.endpoint, queue="reports", cron="0 9 * * *", title="Team report", by=ops.carol
    )


def test_members_see_and_act_on_the_teams_schedules(ops: Ops) -> None:
    schedule = _teams_schedule(ops)

    for member in (ops.alice, ops.carol_client):
        assert "Team report" in member.get(reverse("schedules")).content.decode()
        assert member.get(reverse("schedule_detail", args=[schedule.pk])).status_code == 200
    paused = ops.alice.post(reverse("schedule_action", args=[schedule.pk, "pause"]))
    assert paused.status_code == 302 and not Schedule.objects.get(pk=schedule.pk).enabled
    ran = ops.carol_client.post(reverse("schedule_action", args=[schedule.pk, "run-now"]))
    assert ran.status_code == 302
    assert Todo.objects.filter(endpoint=ops.endpoint, title="Team report").count() == 1
    form = ops.carol_client.get(reverse("schedule_new")).content.decode()
    assert '<option value="agent-t"' in form


@pytest.mark.parametrize(
    ("method", "name", "extra"),
    [
        ("get", "schedule_detail", ()),
        ("get", "schedule_remove", ()),
        ("post", "schedule_remove", ()),
        ("post", "schedule_action", ("pause",)),
        ("post", "schedule_action", ("run-now",)),
    ],
)
def test_an_outsider_gets_404_for_the_teams_schedule_and_nothing_changes(
    ops: Ops, method: str, name: str, extra: tuple[str, ...]
) -> None:
    schedule = _teams_schedule(ops)
    before = Schedule.objects.values().get(pk=schedule.pk)

    response = getattr(ops.bob, method)(
        reverse(name, args=[schedule.pk, *extra]), {"confirm": "yes"}
    )

    assert response.status_code == 404
    assert Schedule.objects.values().get(pk=schedule.pk) == before
    assert not Todo.objects.filter(endpoint=ops.endpoint).exists()
    assert "Team report" not in ops.bob.get(reverse("schedules")).content.decode()
    form = ops.bob.get(reverse("schedule_new")).content.decode()
    assert "agent-t" not in form


def test_the_schedule_command_in_an_outsiders_scope_sees_nothing_of_the_teams(ops: Ops) -> None:
    schedule = _teams_schedule(ops)
    before = Schedule.objects.values().get(pk=schedule.pk)

    assert run_command("schedule", "list", "--as", "bob") == ""
    for action in ("pause", "run-now", "remove"):
        with pytest.raises(CommandError, match="unknown schedule"):
            run_command("schedule", action, str(schedule.pk), "--as", "bob")
    with pytest.raises(CommandError, match="no endpoint with slug 'agent-t'"):
        run_command(
            "schedule", "add", "--endpoint", "agent-t", "--queue", "q", "--cron", "0 9 * * *",
            "--title", "x", "--as", "bob",
        )  # fmt: skip

    assert Schedule.objects.values().get(pk=schedule.pk) == before
    assert Schedule.objects.count() == 1
    assert "Team report" in run_command("schedule", "list", "--as", "carol")
    assert "Paused" in run_command("schedule", "pause", str(schedule.pk), "--as", "carol")


# --- alert channels ---------------------------------------------------------------------------


def test_a_teams_alert_channel_is_its_members_and_unknown_to_an_outsider(
    ops: Ops, personas: Personas
) -> None:
    channel, _ = channels.add_channel(None, team=ops.team, email="ops@example.com", name="ops-mail")
    channels.add_rule(channel, RuleKind.DEPTH, threshold=0)
    new_todo(ops.endpoint.id, "triage")
    sweep.apply(RuleKind.DEPTH, evaluate.read(RuleKind.DEPTH))
    assert Alert.objects.filter(channel=channel, state="open").count() == 1

    for human, client in ((personas.alice, ops.alice), (ops.carol, ops.carol_client)):
        assert [c.pk for c in channels.visible(human)] == [channel.pk]
        assert channels.get_visible(human, channel.pk) == channel
        page = client.get(reverse("alerts")).content.decode()
        assert str(channel.pk) in page and "Queue agent-t/triage" in page
        assert 'title="open alerts">1<' in client.get(reverse("alerts_bell")).content.decode()
    assert channels.visible(personas.bob) == []
    assert channels.get_visible(personas.bob, channel.pk) is None
    page = ops.bob.get(reverse("alerts")).content.decode()
    assert str(channel.pk) not in page and "agent-t" not in page
    assert ops.bob.get(reverse("alerts_bell")).content == b""

    before = AlertChannel.objects.values().get(pk=channel.pk)
    for name, data in (
        ("alert_channel_test", {}),
        ("alert_channel_enabled", {"enabled": "no"}),
        ("alert_channel_delete", {"confirm": "yes"}),
    ):
        assert ops.bob.post(reverse(name, args=[channel.pk]), data).status_code == 404
    assert AlertChannel.objects.values().get(pk=channel.pk) == before
    assert not AlertDelivery.objects.filter(channel=channel, message="test").exists()
    tested = ops.carol_client.post(reverse("alert_channel_test", args=[channel.pk]))
    assert tested.status_code == 302
    assert AlertDelivery.objects.filter(channel=channel, message="test").count() == 1
    off = ops.carol_client.post(
        reverse("alert_channel_enabled", args=[channel.pk]), {"enabled": "no"}
    )
    assert off.status_code == 302 and not AlertChannel.objects.get(pk=channel.pk).enabled


def test_the_alert_command_lists_a_teams_channel_by_team_and_moves_only_as_an_admin(
    ops: Ops, personas: Personas
) -> None:
    mine, _ = channels.add_channel(personas.alice, email="alice@example.com")
    theirs, _ = channels.add_channel(None, team=ops.team, email="ops@example.com")

    listed = run_command("alert", "channel", "list", "--team", "ops")
    assert str(theirs.pk) in listed and "team ops" in listed and str(mine.pk) not in listed
    assert str(theirs.pk) not in run_command("alert", "channel", "list", "--owner", "alice")
    for who, said in (("carol", "not_team_admin"), ("bob", "not_team_admin")):
        with pytest.raises(CommandError, match=said):
            run_command("alert", "channel", "move", str(mine.pk), "--team", "ops", "--as", who)
    mine.refresh_from_db()
    assert (mine.owner_id, mine.team_id) == (personas.alice.pk, None)

    moved = run_command("alert", "channel", "move", str(mine.pk), "--team", "ops", "--as", "alice")

    assert f"Moved channel {mine.pk} to team ops" in moved
    mine.refresh_from_db()
    assert (mine.owner_id, mine.team_id) == (None, ops.team.pk)
    assert channels.get_visible(ops.carol, mine.pk) == mine


# --- every other surface: an outsider sees nothing of the team's, as of an unknown one -------

QUEUE = "ops-q"
TITLE = "Team ops work item"
NEEDLE = "zebra-needle"  # in the team's pending todo's payload: what a search finds it by
SPAN = "zebra-span"  # the span the team's traced attempt sent


@dataclass(frozen=True)
class TeamTodos:
    pending: str  # on agent-t / ops-q, found by NEEDLE
    dead: str  # a dead letter on the same queue
    traced: str  # claimed, with a span, on its own queue


@pytest.fixture
def team_todos(ops: Ops) -> TeamTodos:
    for table in ("overview_minutes", "overview_hours", "overview_marks"):
        fetch_all(f"DELETE FROM {table}", {})  # no model: the test run's flush leaves them
    pending = new_todo(ops.endpoint.id, QUEUE, title=TITLE, payload={"note": NEEDLE}).id
    dead = claimed(ops.endpoint.id, QUEUE, owner=BOT, title=TITLE).todo.id
    lifecycle.fail(ops.endpoint.id, dead, owner=BOT, retryable=False)
    trace = trace_id()
    claim = claimed_with_trace(ops.endpoint.id, trace, queue="ops-traced")
    rows = [
        translate(c, claim.todo.id, claim.attempt_seq, False)
        for c in collect(request([SpanSpec(trace, name=SPAN)])).candidates
    ]
    assert store(rows, set(), attempt_cap=100, todo_cap=100).accepted == 1
    overview.roll_up()
    return TeamTodos(pending, dead, claim.todo.id)


# A probe asks one surface about the team's thing (``team``) or an unknown one, as ``who``
# ("carol", a member, or "bob", an outsider); it answers a status and what was said.
Probe = Callable[[Ops, TeamTodos, str, bool], tuple[int, str]]
# What a probe asks about: the team's (True) or an unknown one's slug, id or search.
Asked = Callable[[TeamTodos, bool], str]


def _board(method: str, url: Asked, data: dict[str, str] | None = None) -> Probe:
    def probe(ops: Ops, todos: TeamTodos, who: str, team: bool) -> tuple[int, str]:
        client = ops.carol_client if who == "carol" else ops.bob
        if method == "get":
            response = client.get(url(todos, team))
        else:  # followed: a done POST redirects to the page that says what it did
            response = client.post(url(todos, team), data or {}, follow=True)
        return response.status_code, html.unescape(response.content.decode())

    return probe


def _command(*args: Asked | str) -> Probe:
    def probe(ops: Ops, todos: TeamTodos, who: str, team: bool) -> tuple[int, str]:
        argv = [a if isinstance(a, str) else a(todos, team) for a in args]
        out, err = StringIO(), StringIO()
        try:
            call_command("todos", *argv, "--as", who, stdout=out, stderr=err)
        except CommandError as exc:
            return exc.returncode, str(exc)
        return 0, out.getvalue() + err.getvalue()

    return probe


def slug(todos: TeamTodos, team: bool) -> str:
    return "agent-t" if team else "no-such"


def pending(todos: TeamTodos, team: bool) -> str:
    return todos.pending if team else UNKNOWN


def dead(todos: TeamTodos, team: bool) -> str:
    return todos.dead if team else UNKNOWN


def traced(todos: TeamTodos, team: bool) -> str:
    return todos.traced if team else UNKNOWN


def needle(todos: TeamTodos, team: bool) -> str:
    return NEEDLE if team else "yak-needle"


def _at_queue(path: str) -> Asked:
    return lambda todos, team: f"{path}?endpoint={slug(todos, team)}&queue={QUEUE}"


def _where(path: str, name: str, value: Asked) -> Asked:
    return lambda todos, team: f"{path}?{name}={value(todos, team)}"


def _get(url: Asked) -> Probe:
    return _board("get", url)


def _post(url: Asked, data: dict[str, str] | None = None) -> Probe:
    return _board("post", url, data)


ONE = "data-count>1<"  # a bulk action's confirm page counting one todo
# A bulk action's confirmation, counted after anything here changed (nothing is left out).
SEEN = {"seen_at": "2999-01-01T00:00:00+00:00", "counted": "9"}

# (what it probes, the probe, what the member is shown that the outsider must not be)
PROBES: list[tuple[str, Probe, str]] = [
    ("overview", _get(lambda todos, team: "/overview/"), f'data-queue="agent-t/{QUEUE}"'),
    ("overview-queue", _get(_at_queue("/overview/")), f'data-queue="agent-t/{QUEUE}"'),
    ("search-text", _get(_where("/", "q", needle)), TITLE),
    ("search-id", _get(_where("/", "q", pending)), TITLE),
    ("bulk-retry-count", _get(_where("/bulk/retry", "endpoint", slug)), ONE),
    ("bulk-cancel-count", _get(_where("/bulk/cancel", "q", needle)), ONE),
    ("bulk-forget-count", _get(_where("/bulk/forget", "endpoint", slug)), ONE),
    ("bulk-cancel", _post(_where("/bulk/cancel", "endpoint", slug), SEEN), "Canceled 2 todos"),
    ("queue-pause-page", _get(_at_queue("/queues/pause")), "claimable now"),
    ("queue-pause", _post(_at_queue("/queues/pause")), f"Paused {QUEUE} on agent-t"),
    ("queue-limits-page", _get(_at_queue("/queues/limits")), 'name="max_in_flight"'),
    ("queue-limits", _post(_at_queue("/queues/limits"), {"max_in_flight": "3"}), "Set the limits"),
    ("spans", _get(lambda todos, team: f"/todos/{traced(todos, team)}"), SPAN),
    ("cli-list", _command("list", "--endpoint", slug), TITLE),
    ("cli-search", _command("list", "--search", needle), TITLE),
    ("cli-show", _command("show", pending, "--json"), TITLE),
    ("cli-retry", _command("retry", dead), "Retried"),
    ("cli-cancel", _command("cancel", pending, "--reason", "not ours"), "Canceled"),
]


def _as_unknown(said: tuple[int, str], todos: TeamTodos, team: bool) -> tuple[int, str]:
    """What was said with the thing asked about, and the CSRF tokens, taken out."""
    status, text = said
    for asked in (slug, pending, dead, traced, needle):
        text = text.replace(asked(todos, team), "ASKED")
    return status, CSRF.sub(b"CSRF", text.encode()).decode()


def _everything() -> tuple[Any, ...]:
    return (
        list(Todo.objects.order_by("id").values()),
        list(QueuePause.objects.values()),
        list(QueueSettings.objects.values()),
        TodoActivity.objects.count(),
    )


@pytest.mark.parametrize(("probe", "shown"), [p[1:] for p in PROBES], ids=[p[0] for p in PROBES])
def test_an_outsider_sees_and_changes_nothing_of_the_teams_anywhere_else(
    ops: Ops, team_todos: TeamTodos, probe: Probe, shown: str
) -> None:
    before = _everything()

    foreign = probe(ops, team_todos, "bob", True)
    unknown = probe(ops, team_todos, "bob", False)

    assert _everything() == before
    assert shown not in foreign[1]
    assert _as_unknown(foreign, team_todos, True) == _as_unknown(unknown, team_todos, False)
    # A member is shown it there: the probe looks where the team's things are.
    assert shown in probe(ops, team_todos, "carol", True)[1]
