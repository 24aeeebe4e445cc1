"""The team admin writes through switchboard.teams: a refusal there (the last admin removed or
demoted, a human added twice) is said on the page it came from with the writer's reason, as the
admin says a form's error, and changes nothing; no bare 403."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.test import Client
from django.urls import reverse

from switchboard import teams
from switchboard.models import Team, TeamMember
from tests.admin_helpers import admin_messages, admin_url
from tests.base import Personas

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
