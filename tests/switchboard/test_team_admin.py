"""The team admin writes through switchboard.teams: a refusal there (the last admin removed or
demoted, a human added twice) is said on the page it came from with the writer's reason, as the
admin says a form's error, and changes nothing; no bare 403."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.admin import UserAdmin
from django.test import Client
from django.urls import reverse

from switchboard import teams
from switchboard.admin import HumanAdmin
from switchboard.models import Human, Team, TeamMember
from tests.admin_helpers import admin_messages, admin_url
from tests.base import Personas
from tests.factories import HumanFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def ops(personas: Personas) -> Team:
    team = teams.create_team("ops", personas.alice)
    teams.add_member(team, personas.bob)
    return team


def _memberships() -> set[tuple[Any, ...]]:
    return set(TeamMember.objects.values_list("team_id", "human_id", "role"))


def _alices(ops: Team, personas: Personas) -> TeamMember:
    return TeamMember.objects.get(team=ops, human=personas.alice)


def test_deleting_the_last_admin_says_why_and_changes_nothing(
    admin_client: Client, personas: Personas, ops: Team
) -> None:
    member = _alices(ops, personas)
    before, logged = _memberships(), LogEntry.objects.count()

    response = admin_client.post(
        admin_url("admin:switchboard_teammember_delete", member.pk), {"post": "yes"}
    )

    assert response.status_code == 302
    assert response["Location"] == admin_url("admin:switchboard_teammember_change", member.pk)
    assert admin_messages(response) == [
        "Not deleted: alice is the last admin of team ops; make another member an admin first."
    ]
    assert _memberships() == before and LogEntry.objects.count() == logged


def test_demoting_the_last_admin_says_why_and_changes_nothing(
    admin_client: Client, personas: Personas, ops: Team
) -> None:
    member = _alices(ops, personas)
    url = admin_url("admin:switchboard_teammember_change", member.pk)
    before, logged = _memberships(), LogEntry.objects.count()

    response = admin_client.post(url, {"role": "member"})

    assert response.status_code == 302 and response["Location"] == url
    assert admin_messages(response) == ["Not changed: alice is the last admin of team ops."]
    assert _memberships() == before and LogEntry.objects.count() == logged
    page = admin_client.get(url).content.decode()
    assert "alice is the last admin of team ops" in page


def test_adding_a_member_twice_says_why_and_changes_nothing(
    admin_client: Client, personas: Personas, ops: Team
) -> None:
    url = reverse("admin:switchboard_teammember_add")
    before = _memberships()

    response = admin_client.post(url, {"team": ops.pk, "human": personas.bob.pk, "role": "admin"})

    assert response.status_code == 302 and response["Location"] == url
    assert admin_messages(response) == ["Not added: bob is already a member of team ops."]
    assert _memberships() == before


def test_a_demotion_with_another_admin_left_goes_through(
    admin_client: Client, personas: Personas, ops: Team
) -> None:
    teams.set_role(ops, personas.bob, admin=True)
    member = _alices(ops, personas)

    response = admin_client.post(
        admin_url("admin:switchboard_teammember_change", member.pk), {"role": "member"}
    )

    assert response.status_code == 302
    assert _alices(ops, personas).role == "member"


# --- deleting a human ---------------------------------------------------------------------------
# Their memberships go with them (TeamMember.human cascades); a team's last admin among them
# protects the human as an endpoint they own does.


@pytest.fixture
def crew() -> tuple[Team, Human, Human]:
    """Team crew: carol its only admin, dave a member; neither owns anything."""
    carol, dave = HumanFactory(username="carol"), HumanFactory(username="dave")
    team = teams.create_team("crew", carol)
    teams.add_member(team, dave)
    return team, carol, dave


def test_deleting_a_teams_last_admin_is_refused_naming_the_team(
    admin_client: Client, crew: tuple[Team, Human, Human]
) -> None:
    _, carol, _ = crew
    url = admin_url("admin:switchboard_human_delete", carol.pk)
    before, logged = _memberships(), LogEntry.objects.count()

    page = admin_client.get(url).content.decode()
    response = admin_client.post(url, {"post": "yes"})

    assert "carol is the last admin of team crew; make another member an admin first" in page
    assert 'type="submit"' not in page.split('id="content"')[1]
    assert response.status_code == 200  # the same page again, nothing deleted
    assert Human.objects.filter(pk=carol.pk).exists()
    assert _memberships() == before and LogEntry.objects.count() == logged


def test_the_bulk_delete_refuses_a_teams_last_admins_together(
    admin_client: Client, crew: tuple[Team, Human, Human]
) -> None:
    team, carol, dave = crew
    teams.set_role(team, dave, admin=True)
    before = _memberships()

    response = admin_client.post(
        reverse("admin:switchboard_human_changelist"),
        {"action": "delete_selected", "_selected_action": [carol.pk, dave.pk], "post": "yes"},
    )

    assert response.status_code == 200
    assert "carol and dave are the last admins of team crew" in response.content.decode()
    assert Human.objects.filter(pk__in=[carol.pk, dave.pk]).count() == 2
    assert _memberships() == before


def test_an_admin_with_another_admin_left_is_deleted_with_the_membership(
    admin_client: Client, crew: tuple[Team, Human, Human]
) -> None:
    team, carol, dave = crew
    teams.set_role(team, dave, admin=True)

    response = admin_client.post(
        reverse("admin:switchboard_human_changelist"),
        {"action": "delete_selected", "_selected_action": [carol.pk], "post": "yes"},
    )

    assert response.status_code == 302
    assert not Human.objects.filter(pk=carol.pk).exists()
    assert set(TeamMember.objects.filter(team=team).values_list("human__username", "role")) == {
        ("dave", "admin")
    }


def test_a_delete_the_page_let_through_is_refused_by_the_writer(
    admin_client: Client, crew: tuple[Team, Human, Human], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's check and the delete are two reads: another admin removed between them
    leaves the writer, which locks the team, to refuse."""
    _, carol, _ = crew
    monkeypatch.setattr(HumanAdmin, "get_deleted_objects", UserAdmin.get_deleted_objects)
    before, logged = _memberships(), LogEntry.objects.count()

    response = admin_client.post(
        admin_url("admin:switchboard_human_delete", carol.pk), {"post": "yes"}
    )

    assert response.status_code == 302
    assert response["Location"] == admin_url("admin:switchboard_human_change", carol.pk)
    assert admin_messages(response) == [
        "Not deleted: carol is the last admin of team crew; make another member an admin first."
    ]
    assert Human.objects.filter(pk=carol.pk).exists()
    assert _memberships() == before and LogEntry.objects.count() == logged
