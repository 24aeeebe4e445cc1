"""switchboard/teams.py and ``manage.py team``: a team is created with its first admin; adding a
human twice, removing or demoting the last admin, a bad name and a move by someone who does not
administer the team are refused by a named reason with nothing changed. ``create_endpoint
--team`` makes a team's endpoint; ``cancel`` without ``--as`` reaches a team's todo."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, connection

from switchboard import credentials, teams
from switchboard.models import Endpoint, Team, TeamMember, TeamRole
from tests.base import Personas
from tests.factories import HumanFactory
from tests.reach import new_todo
from todos.models import Todo

pytestmark = pytest.mark.django_db


def _rows() -> set[tuple[object, ...]]:
    return set(TeamMember.objects.values_list("team__name", "human__username", "role"))


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def refused(*args: str) -> str:
    with pytest.raises(CommandError) as exc:
        run(*args)
    return str(exc.value)


def test_the_team_command_creates_adds_moves_and_removes(personas: Personas) -> None:
    HumanFactory(username="carol")

    assert "alice is its admin" in run("team", "create", "ops", "--owner", "alice")
    assert "as member" in run("team", "add", "ops", "carol")
    assert "as admin" in run("team", "add", "ops", "bob", "--admin")
    assert _rows() == {
        ("ops", "alice", "admin"),
        ("ops", "carol", "member"),
        ("ops", "bob", "admin"),
    }
    assert "Moved endpoint agent-a" in run(
        "team", "move", "ops", "--endpoint", "agent-a", "--as", "alice"
    )
    personas.endpoint_a.refresh_from_db()
    assert personas.endpoint_a.team is not None and personas.endpoint_a.owner_id is None
    assert "Removed bob" in run("team", "remove", "ops", "bob")
    shown = run("team", "show", "ops")
    assert "endpoint agent-a" in shown and "carol" in shown


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("team", "create", "Not_A_Slug", "--owner", "alice"), "bad_name"),
        (("team", "create", "_under", "--owner", "alice"), "bad_name"),
        (("team", "create", "new", "--owner", "alice"), "bad_name"),
        (("team", "create", "ops", "--owner", "bob"), "name_taken"),
        (("team", "add", "ops", "alice"), "already_member"),
        (("team", "remove", "ops", "alice"), "last_admin"),
        (("team", "remove", "ops", "bob"), "not_member"),
        (("team", "role", "ops", "alice", "--member"), "last_admin"),
        (("team", "move", "ops", "--endpoint", "agent-b", "--as", "bob"), "not_team_admin"),
        (("team", "move", "ops", "--endpoint", "agent-b", "--as", "alice"), "not_manager"),
    ],
)
def test_each_refusal_names_its_reason_and_changes_nothing(
    personas: Personas, args: tuple[str, ...], code: str
) -> None:
    teams.create_team("ops", personas.alice)
    before = (_rows(), set(Team.objects.values_list("name", flat=True)))
    endpoints = set(Endpoint.objects.values_list("slug", "owner_id", "team_id"))

    message = refused(*args)

    assert message.startswith(f"refused ({code}):"), message
    assert (_rows(), set(Team.objects.values_list("name", flat=True))) == before
    assert set(Endpoint.objects.values_list("slug", "owner_id", "team_id")) == endpoints


def test_unknown_names_are_said_as_such(personas: Personas) -> None:
    assert "no team named 'nope'" in refused("team", "add", "nope", "alice")
    teams.create_team("ops", personas.alice)
    assert "no operator named 'zed'" in refused("team", "add", "ops", "zed")
    assert "no endpoint with slug 'zed'" in refused("team", "move", "ops", "--endpoint", "zed")


def test_create_endpoint_team_makes_an_endpoint_its_members_own(personas: Personas) -> None:
    teams.create_team("ops", personas.alice)
    out, err = StringIO(), StringIO()
    call_command("create_endpoint", "--team", "ops", "--slug", "ops-agent", stdout=out, stderr=err)

    endpoint = Endpoint.objects.get(slug="ops-agent")
    assert endpoint.owner_id is None and endpoint.team is not None and endpoint.team.name == "ops"
    assert credentials.key_for_plaintext(out.getvalue().strip()) is not None
    assert "for team ops" in err.getvalue()
    assert "no team named 'nope'" in refused("create_endpoint", "--team", "nope", "--slug", "x")


def test_the_system_cancels_a_teams_todo_in_its_admins_scope(personas: Personas) -> None:
    team = teams.create_team("ops", personas.alice)
    endpoint, _, _ = credentials.create_endpoint(
        None, team=team, name="t", slug="agent-t", verbs=[]
    )
    todo = new_todo(endpoint.id)

    assert "Canceled" in run("cancel", todo.id, "--reason", "dup")
    assert Todo.objects.get(pk=todo.id).state == "canceled"
    other = new_todo(endpoint.id)
    assert refused("cancel", other.id, "--reason", "dup", "--as", "bob") == f"{other.id}: not found"


def _refused_by_the_database(sql: str, args: list[object]) -> bool:
    """Whether ``sql`` raises an IntegrityError; rolled back to a savepoint either way."""
    with connection.cursor() as cur:
        cur.execute("SAVEPOINT s")
        try:
            cur.execute(sql, args)
        except IntegrityError:
            return True
        finally:
            cur.execute("ROLLBACK TO SAVEPOINT s")
    return False


def test_the_database_holds_an_endpoint_to_exactly_one_owner(personas: Personas) -> None:
    team = teams.create_team("ops", personas.alice)
    update = "UPDATE endpoints SET owner_id = %s, team_id = %s WHERE slug = 'agent-a'"
    assert _refused_by_the_database(update, [personas.alice.pk, team.pk])
    assert _refused_by_the_database(update, [None, None])
    assert not _refused_by_the_database(update, [None, team.pk])


def test_the_database_refuses_a_team_name_off_the_slug_rules_and_an_unknown_role(
    personas: Personas,
) -> None:
    team = teams.create_team("ops", personas.alice)
    assert _refused_by_the_database(
        "INSERT INTO teams (name, created_at) VALUES ('Bad Name', now())", []
    )
    assert _refused_by_the_database(
        "UPDATE team_members SET role = 'owner' WHERE team_id = %s", [team.pk]
    )
    assert TeamMember.objects.get(team=team).role == TeamRole.ADMIN
