"""A team's alert channel (alerts 0002, docs/decisions/0034-teams.md): owned by a team instead of
a human, exactly one of them; "all its owner's endpoints" is then the team's endpoints only, in
the evaluators' SQL and in the rule check alike; ``alert channel add --team`` and the admin make
one; reversing the migration hands a team's channel back to one of its admins."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse

from alerts import channels, evaluate
from alerts.models import AlertChannel, RuleKind
from switchboard import credentials, teams
from switchboard.lib.errors import InvalidInput
from switchboard.models import Endpoint, Team
from tests.base import Personas
from tests.factories import HumanFactory
from tests.plans import plan_nodes
from tests.reach import new_todo


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def ops_team(personas: Personas) -> tuple[Team, Endpoint]:
    """Team ops: alice its admin, carol a member, with its own endpoint agent-t."""
    team = teams.create_team("ops", personas.alice)
    teams.add_member(team, HumanFactory(username="carol"))
    endpoint, _, _ = credentials.create_endpoint(
        None, team=team, name="Ops agent", slug="agent-t", verbs=["list_todos"]
    )
    return team, endpoint


def heard(channel: AlertChannel) -> set[str]:
    """The endpoints whose pending todos the channel's depth rule finds, by slug."""
    rule_ids = set(channel.rules.filter(kind=RuleKind.DEPTH).values_list("id", flat=True))
    found = {f.endpoint_id for f in evaluate.read(RuleKind.DEPTH) if f.rule_id in rule_ids}
    return set(Endpoint.objects.filter(id__in=found).values_list("slug", flat=True))


@pytest.mark.django_db
def test_a_teams_channel_hears_about_the_teams_endpoints_only(personas: Personas) -> None:
    team, endpoint = ops_team(personas)
    for on in (endpoint, personas.endpoint_a, personas.endpoint_b):
        new_todo(on.id, "triage")
    teams_channel, _ = channels.add_channel(None, team=team, email="ops@example.com")
    alices, _ = channels.add_channel(personas.alice, email="alice@example.com")
    bobs, _ = channels.add_channel(personas.bob, email="bob@example.com")
    for channel in (teams_channel, alices, bobs):
        channels.add_rule(channel, RuleKind.DEPTH, threshold=0)

    # The team's: its own endpoint, not its admin's personal one. Alice's: her own and her
    # team's (she sees both). Bob's: his own.
    assert heard(teams_channel) == {"agent-t"}
    assert heard(alices) == {"agent-a", "agent-t"}
    assert heard(bobs) == {"agent-b"}
    # The budget kinds read the same rows (rule_endpoints.sql).
    rows = evaluate.rule_endpoints(RuleKind.BUDGET_WARNING)
    by_rule = {r["rule_id"]: r["endpoint_id"] for r in rows}
    warning = teams_channel.rules.get(kind=RuleKind.BUDGET_WARNING)
    assert [e for r, e in by_rule.items() if r == warning.pk] == [endpoint.id]


@pytest.mark.django_db
def test_a_teams_channel_narrows_only_to_the_teams_endpoints(personas: Personas) -> None:
    team, endpoint = ops_team(personas)
    channel, _ = channels.add_channel(None, team=team, email="ops@example.com")

    for foreign in (personas.endpoint_a, personas.endpoint_b):
        with pytest.raises(InvalidInput, match="no endpoint of the channel's owner"):
            channels.add_rule(channel, RuleKind.DEPTH, endpoint=foreign, threshold=1)
    rule = channels.add_rule(channel, RuleKind.DEPTH, endpoint=endpoint, threshold=1)

    assert rule.endpoint_id == endpoint.id
    assert channel.rules.filter(kind=RuleKind.DEPTH).count() == 1


@pytest.mark.django_db
def test_a_channel_is_a_humans_or_a_teams_exactly_one(personas: Personas) -> None:
    team, _ = ops_team(personas)
    for owner, owning_team in ((None, None), (personas.alice, team)):
        with pytest.raises(ValueError, match="exactly one"):
            channels.add_channel(owner, team=owning_team, email="ops@example.com")
    channel, _ = channels.add_channel(personas.alice, email="ops@example.com")
    with pytest.raises(IntegrityError, match="alertchannel_owned_once"), transaction.atomic():
        AlertChannel.objects.filter(pk=channel.pk).update(team=team)
    assert AlertChannel.objects.count() == 1


@pytest.mark.django_db
def test_the_command_adds_a_teams_channel_and_refuses_an_unknown_team(personas: Personas) -> None:
    team, _ = ops_team(personas)

    out = run("alert", "channel", "add", "--team", "ops", "--email", "ops@example.com")

    channel = AlertChannel.objects.get()
    assert (channel.owner_id, channel.team_id) == (None, team.pk)
    assert f"channel: {channel.pk}" in out and "on all of the endpoints of team ops" in out
    assert f"{channel.pk}  email    on   team ops  ops@example.com" in run(
        "alert", "channel", "list"
    )
    with pytest.raises(CommandError, match="no team named 'nope'"):
        run("alert", "channel", "add", "--team", "nope", "--email", "x@example.com")
    with pytest.raises(CommandError, match="not allowed with argument"):
        run(
            "alert", "channel", "add", "--owner", "alice", "--team", "ops",
            "--email", "x@example.com",
        )  # fmt: skip
    assert AlertChannel.objects.count() == 1


def admin_form(**fields: Any) -> dict[str, Any]:
    return {
        "kind": "email",
        "name": "ops",
        "url": "",
        "email": "ops@example.com",
        "enabled": "on",
        "rules-TOTAL_FORMS": "0",
        "rules-INITIAL_FORMS": "0",
        "rules-MIN_NUM_FORMS": "0",
        "rules-MAX_NUM_FORMS": "1000",
        **fields,
    }


@pytest.mark.django_db
def test_the_admin_adds_a_teams_channel_and_refuses_neither_or_both(
    personas: Personas, admin_client: Client
) -> None:
    team, _ = ops_team(personas)
    url = reverse("admin:alerts_alertchannel_add")

    for owners in ({}, {"owner": personas.alice.pk, "team": team.pk}):
        refused = admin_client.post(url, admin_form(**owners))
        assert "Choose an owner or a team, exactly one." in refused.content.decode()
    assert not AlertChannel.objects.exists()

    added = admin_client.post(url, admin_form(team=team.pk))

    assert added.status_code == 302
    channel = AlertChannel.objects.get()
    assert (channel.owner_id, channel.team_id) == (None, team.pk)
    assert channel.rules.count() == 4
    listing = admin_client.get(reverse("admin:alerts_alertchannel_changelist")).content.decode()
    assert "team ops" in listing


# --- the migration's reverse ------------------------------------------------------------------


def _migrate(target: list[tuple[str, str]]) -> None:
    MigrationExecutor(connection).migrate(target)


@pytest.fixture
def back_to_latest() -> Any:
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_reversing_the_migration_hands_a_teams_channel_to_its_admin(
    personas: Personas, back_to_latest: None
) -> None:
    team, _ = ops_team(personas)
    channel, _ = channels.add_channel(None, team=team, email="ops@example.com")
    orphan_team = teams.create_team("gone", personas.bob)
    orphan, _ = channels.add_channel(None, team=orphan_team, email="gone@example.com")
    orphan_team.memberships.all().delete()  # its last member left (their human was deleted)

    with pytest.raises(Exception, match=f"alert channel {orphan.pk} belongs to a team with no"):
        _migrate([("alerts", "0001_alerts")])
    # Nothing changed: the reverse ran in one transaction.
    assert AlertChannel.objects.get(pk=channel.pk).team_id == team.pk

    AlertChannel.objects.filter(pk=orphan.pk).delete()
    _migrate([("alerts", "0001_alerts")])

    with connection.cursor() as cursor:
        cursor.execute("SELECT owner_id FROM alert_channels WHERE id = %s", [channel.pk])
        assert cursor.fetchone() == (personas.alice.pk,)


@pytest.mark.django_db
def test_a_channels_teams_are_read_once_per_channel_not_per_endpoint(personas: Personas) -> None:
    """The owner's memberships are read with the channels (OWNER_TEAMS_SQL), before any endpoint
    is: in a condition on the channel-endpoint join they ran once per (rule, endpoint) pair,
    24.5 s for 400 channels and 2,000 endpoints, against 27.5 ms this way."""
    team, _ = ops_team(personas)
    channels.add_channel(None, team=team, email="ops@example.com")
    channels.add_channel(personas.alice, email="alice@example.com")
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN (FORMAT JSON) " + evaluate.RULE_ENDPOINTS, {"kind": RuleKind.DEAD_LETTER}
        )
        (row,) = cursor.fetchall()
    nodes = list(plan_nodes(row[0][0]["Plan"]))
    conditions = ("Filter", "Join Filter", "Recheck Cond", "Index Cond", "Hash Cond")
    per_pair = [
        (node["Node Type"], key, node[key])
        for node in nodes
        for key in conditions
        if "SubPlan" in str(node.get(key, ""))
    ]
    assert per_pair == []
    (memberships,) = [n for n in nodes if n.get("Relation Name") == "team_members"]
    assert memberships["Parent Relationship"] == "SubPlan"
    (reading,) = [n for n in nodes if n.get("Relation Name") == "alert_channels"]
    assert reading["Parent Relationship"] == "InitPlan"  # the materialized channels
