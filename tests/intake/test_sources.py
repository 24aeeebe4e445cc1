"""Sources and rules, written only by ``todos.intake.sources``: what a secret means (given when
verifying, kept when verification is turned off, and rotation turns verification on), rules
appended in order and held to ``Rule.clean``; and every way in (Board, admin, commands, demo)
storing the same source and rule for the same input."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from switchboard import demo
from tests.base import Personas
from tests.factories import EndpointFactory, RuleFactory, SourceFactory
from todos import lifecycle
from todos.intake import sources
from todos.models import Event, Rule, Source

pytestmark = pytest.mark.django_db

SECRET_RE = re.compile(r"sbw_[A-Za-z0-9_-]{43}")


def _stored(source: Source) -> tuple[bool, str]:
    row = Source.objects.get(pk=source.pk)
    return row.verify, row.secret


# --- creating a source ------------------------------------------------------------------------


def test_a_verifying_source_is_created_with_a_secret_returned_once(personas: Personas) -> None:
    source, secret = sources.create_source(personas.alice, "gh", name="GitHub")

    assert secret is not None and SECRET_RE.fullmatch(secret)
    row = Source.objects.get(slug="gh")
    assert (row.pk, row.owner, row.name, row.verify, row.secret) == (
        source.pk,
        personas.alice,
        "GitHub",
        True,
        secret,
    )


def test_a_source_that_does_not_verify_has_no_secret(personas: Personas) -> None:
    source, secret = sources.create_source(personas.alice, "open", verify=False)

    assert secret is None
    assert _stored(source) == (False, "")
    assert Source.objects.get(slug="open").name == "open"  # the slug when no name is given


@pytest.mark.parametrize(
    ("slug", "message"),
    [
        ("new", "reserved on the Board"),
        ("taken", "Source with this Slug already exists."),
        ("Not A Slug", "Use lowercase letters"),
    ],
)
def test_create_source_refuses_a_reserved_taken_or_malformed_slug(
    personas: Personas, slug: str, message: str
) -> None:
    SourceFactory(owner=personas.bob, slug="taken")

    with pytest.raises(ValidationError) as refused:
        sources.create_source(personas.alice, slug)

    assert message in " ".join(refused.value.message_dict["slug"])
    assert not Source.objects.filter(owner=personas.alice).exists()


def test_update_source_renames_and_leaves_slug_owner_and_secret_alone(
    personas: Personas,
) -> None:
    source = SourceFactory(owner=personas.alice, slug="gh")
    secret = source.secret

    sources.update_source(source, name="")
    assert Source.objects.get(pk=source.pk).name == "gh"  # the slug, when the name is blank

    source.slug, source.owner = "moved", personas.bob  # not among what an edit stores
    sources.update_source(source, name="GitHub")

    row = Source.objects.get(pk=source.pk)
    assert (row.slug, row.owner, row.name, row.secret) == ("gh", personas.alice, "GitHub", secret)


# --- verification and the secret --------------------------------------------------------------


def test_turning_verification_off_and_on_keeps_the_secret(personas: Personas) -> None:
    source, secret = sources.create_source(personas.alice, "gh")

    assert sources.set_verify(source, False) is None
    assert _stored(source) == (False, secret)
    assert sources.set_verify(source, True) is None
    assert _stored(source) == (True, secret)


def test_turning_verification_on_mints_a_secret_for_a_source_without_one(
    personas: Personas,
) -> None:
    source, _ = sources.create_source(personas.alice, "open", verify=False)

    minted = sources.set_verify(source, True)

    assert minted is not None and SECRET_RE.fullmatch(minted)
    assert _stored(source) == (True, minted)


@pytest.mark.parametrize("verify", [True, False], ids=["verifying", "not-verifying"])
def test_rotating_a_secret_replaces_it_and_turns_verification_on(
    personas: Personas, verify: bool
) -> None:
    source, _ = sources.create_source(personas.alice, "gh", verify=verify)
    old = Source.objects.get(pk=source.pk).secret

    secret = sources.rotate_secret(source)

    assert secret != old and SECRET_RE.fullmatch(secret)
    assert _stored(source) == (True, secret)


def test_a_rotation_drawn_against_an_older_secret_rotates_nothing(personas: Personas) -> None:
    source, secret = sources.create_source(personas.alice, "gh")
    assert secret is not None
    stale = sources.secret_fingerprint(secret)
    _, rotated = sources.rotate_secret_if_current(source.pk, stale)
    assert rotated is not None

    again, none = sources.rotate_secret_if_current(source.pk, stale)

    assert none is None and again.pk == source.pk
    assert _stored(source) == (True, rotated)


def test_deleting_a_source_deletes_its_rules_and_events(personas: Personas) -> None:
    source = SourceFactory(owner=personas.alice)
    RuleFactory(source=source, endpoint=personas.endpoint_a)
    Event.objects.create(source=source, disposition="dropped", payload={})
    other = RuleFactory(source=SourceFactory(owner=personas.alice), endpoint=personas.endpoint_a)

    sources.delete_source(source)

    assert not Source.objects.filter(pk=source.pk).exists()
    assert not Rule.objects.filter(source_id=source.pk).exists()
    assert not Event.objects.filter(source_id=source.pk).exists()
    assert Rule.objects.filter(pk=other.pk).exists()


# --- rules ------------------------------------------------------------------------------------


def test_rules_are_appended_ten_after_the_last_unless_a_position_is_given(
    personas: Personas,
) -> None:
    source = SourceFactory(owner=personas.alice)
    first = sources.create_rule(source, personas.endpoint_a, queue="one")
    placed = sources.create_rule(source, personas.endpoint_a, queue="two", position=35)
    last = sources.create_rule(source, personas.endpoint_a, queue="three")

    assert (first.position, placed.position, last.position) == (0, 35, 45)
    assert first.match == {} and first.enabled and first.max_attempts == 5


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"match": {"body": {}}}, "match"),
        ({"queue": " padded "}, "queue"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"endpoint": "REVOKED"}, "endpoint"),
        ({"endpoint": "BOB"}, "endpoint"),
    ],
)
def test_create_rule_refuses_what_intake_could_not_route(
    personas: Personas, changes: dict[str, Any], field: str
) -> None:
    source = SourceFactory(owner=personas.alice)
    revoked = EndpointFactory(owner=personas.alice)
    lifecycle.revoke_endpoint(personas.alice.id, revoked.id)
    revoked.refresh_from_db()
    endpoints = {"REVOKED": revoked, "BOB": personas.endpoint_b}
    given: dict[str, Any] = {"queue": "q", **changes}
    endpoint = endpoints.get(given.pop("endpoint", ""), personas.endpoint_a)

    with pytest.raises(ValidationError) as refused:
        sources.create_rule(source, endpoint, **given)

    assert field in refused.value.message_dict
    assert not Rule.objects.exists()


def test_update_rule_stores_an_edit_and_refuses_a_bad_one(personas: Personas) -> None:
    rule = sources.create_rule(
        SourceFactory(owner=personas.alice), personas.endpoint_a, queue="q", position=7
    )
    rule.queue, rule.position = "q2", 3
    sources.update_rule(rule)
    assert Rule.objects.values_list("queue", "position").get(pk=rule.pk) == ("q2", 3)

    rule.match = {"payload": {"a": {"regex": "."}}}
    with pytest.raises(ValidationError):
        sources.update_rule(rule)

    assert Rule.objects.get(pk=rule.pk).match == {}


def test_update_rule_does_not_create_a_rule(personas: Personas) -> None:
    unsaved = Rule(source=SourceFactory(owner=personas.alice), endpoint=personas.endpoint_a)

    with pytest.raises(ValueError, match="create_rule adds one"):
        sources.update_rule(unsaved)

    assert not Rule.objects.exists()


def test_enabling_says_whether_anything_changed(personas: Personas) -> None:
    rule = RuleFactory(source=SourceFactory(owner=personas.alice), endpoint=personas.endpoint_a)

    assert sources.set_rule_enabled(rule, False) is True
    assert sources.set_rule_enabled(rule, False) is False
    assert Rule.objects.get(pk=rule.pk).enabled is False


def test_deleting_rules_leaves_the_others(personas: Personas) -> None:
    source = SourceFactory(owner=personas.alice)
    keep, drop, also = (
        RuleFactory(source=source, endpoint=personas.endpoint_a, queue=q) for q in "abc"
    )

    sources.delete_rule(drop)
    sources.delete_rules(Rule.objects.filter(pk=also.pk))

    assert list(Rule.objects.values_list("pk", flat=True)) == [keep.pk]


# --- every way in: the same source ------------------------------------------------------------


def _board(personas: Personas) -> Client:
    client = Client()
    client.force_login(personas.alice)
    return client


def _admin(personas: Personas) -> Client:
    client = Client()
    client.force_login(personas.admin)
    return client


def _create_on_the_board(personas: Personas, slug: str, verify: bool) -> str:
    data = {"slug": slug, "name": "Same", **({"verify": "on"} if verify else {})}
    response = _board(personas).post(reverse("source_new"), data, follow=True)
    assert response.status_code == 200
    return response.content.decode()


def _add_in_the_admin(personas: Personas, slug: str, verify: bool) -> str:
    data = {
        "owner": personas.alice.pk,
        "slug": slug,
        "name": "Same",
        **({"verify": "on"} if verify else {}),
        "rules-TOTAL_FORMS": "0",
        "rules-INITIAL_FORMS": "0",
    }
    response = _admin(personas).post(reverse("admin:todos_source_add"), data, follow=True)
    assert response.status_code == 200
    return response.content.decode()


def _run_create_source(personas: Personas, slug: str, verify: bool) -> str:
    out = io.StringIO()
    flags = [] if verify else ["--no-verify"]
    call_command(
        "create_source",
        "--owner=alice",
        f"--slug={slug}",
        "--name=Same",
        *flags,
        stdout=out,
        stderr=io.StringIO(),
    )
    return out.getvalue()


SOURCE_SURFACES = {
    "board": _create_on_the_board,
    "admin": _add_in_the_admin,
    "command": _run_create_source,
}


@pytest.mark.parametrize("verify", [True, False], ids=["verifying", "not-verifying"])
@pytest.mark.parametrize("surface", SOURCE_SURFACES)
def test_every_way_in_creates_the_same_source_and_shows_its_secret_only_if_it_has_one(
    personas: Personas, surface: str, verify: bool
) -> None:
    shown = SOURCE_SURFACES[surface](personas, f"via-{surface}", verify)

    source = Source.objects.get(slug=f"via-{surface}")
    assert (source.owner, source.name, source.verify) == (personas.alice, "Same", verify)
    if verify:
        assert SECRET_RE.fullmatch(source.secret)
        assert set(SECRET_RE.findall(shown)) == {source.secret}
    else:
        assert source.secret == ""
        assert not SECRET_RE.findall(shown)


def test_the_demo_source_is_what_create_source_stores() -> None:
    seeded = demo.seed("demo-password-for-tests")
    assert seeded is not None

    source = Source.objects.get(slug=demo.SOURCE_SLUG)
    assert (source.verify, source.secret) == (True, seeded.webhook_secret)
    rule = source.rules.get()
    assert (rule.position, rule.match, rule.max_attempts) == (0, demo.CI_FAILURE_MATCH, 3)


def test_every_way_in_refuses_the_slug_the_board_reserves(personas: Personas) -> None:
    on_the_board = _board(personas).post(reverse("source_new"), {"slug": "new", "verify": "on"})
    in_the_admin = _admin(personas).post(
        reverse("admin:todos_source_add"),
        {
            "owner": personas.alice.pk,
            "slug": "new",
            "name": "N",
            "rules-TOTAL_FORMS": "0",
            "rules-INITIAL_FORMS": "0",
        },
    )
    with pytest.raises(CommandError, match="reserved on the Board"):
        _run_create_source(personas, "new", True)

    for response in (on_the_board, in_the_admin):
        assert response.status_code == 200
        assert "reserved on the Board" in response.content.decode()
    assert not Source.objects.exists()


# --- every way in: the same rotation ----------------------------------------------------------


def _rotate_on_the_board(personas: Personas, source: Source) -> str:
    # The page offers rotation only while verifying (otherwise "Verify signatures"); the POST
    # carries the fingerprint of the secret it replaces, as the page's form would.
    current = sources.secret_fingerprint(Source.objects.get(pk=source.pk).secret)
    url = reverse("source_rotate", args=[source.slug])
    data = {"current": current, "confirm": "yes"}  # as the confirmation step posts it
    return _board(personas).post(url, data, follow=True).content.decode()


def _rotate_in_the_admin(personas: Personas, source: Source) -> str:
    url = reverse("admin:todos_source_rotate_secret", args=[source.pk])
    return _admin(personas).post(url).content.decode()


def _rotate_with_the_admin_action(personas: Personas, source: Source) -> str:
    response = _admin(personas).post(
        reverse("admin:todos_source_changelist"),
        {"action": "rotate_secrets", "_selected_action": [source.pk], "index": "0"},
    )
    return response.content.decode()


ROTATIONS = {
    "board": _rotate_on_the_board,
    "admin": _rotate_in_the_admin,
    "admin-action": _rotate_with_the_admin_action,
}


@pytest.mark.parametrize("surface", ROTATIONS)
def test_every_rotation_shows_a_new_secret_once_and_turns_verification_on(
    personas: Personas, surface: str
) -> None:
    source = SourceFactory(owner=personas.alice, slug="quiet", verify=False, secret="old-secret")

    shown = ROTATIONS[surface](personas, source)

    verify, secret = _stored(source)
    assert (verify, set(SECRET_RE.findall(shown))) == (True, {secret})


# --- every way in: the same rule --------------------------------------------------------------

MATCH = {"headers": {"X-GitHub-Event": "deployment"}}


def _rule_fields(**extra: Any) -> dict[str, Any]:
    return {
        "name": "Deploys",
        "queue": "deploy",
        "match": json.dumps(MATCH),
        "title_template": "Deploy {{ ref }}",
        "work_order_template": "Watch it.",
        "max_attempts": "4",
        "position": "",
        "enabled": "on",
        **extra,
    }


def _add_rule_on_the_board(personas: Personas, source: Source) -> None:
    data = _rule_fields(endpoint=str(personas.endpoint_a.pk))
    response = _board(personas).post(reverse("rule_new", args=[source.slug]), data)
    assert response.status_code == 302, response.content.decode()[:2000]


def _add_rule_in_the_admin(personas: Personas, source: Source) -> None:
    data = _rule_fields(source=source.pk, endpoint=personas.endpoint_a.pk)
    response = _admin(personas).post(reverse("admin:todos_rule_add"), data)
    assert response.status_code == 302, response.content.decode()[:2000]


def _add_rule_on_its_source_page(personas: Personas, source: Source) -> None:
    # The inline edits only a rule's summary columns; the rest are the model's defaults.
    existing = list(source.rules.order_by("pk"))
    data: dict[str, Any] = {
        "owner": source.owner_id,
        "slug": source.slug,
        "name": source.name,
        "verify": "on",
        "rules-TOTAL_FORMS": str(len(existing) + 1),
        "rules-INITIAL_FORMS": str(len(existing)),
    }
    for n, rule in enumerate(existing):
        data |= {
            f"rules-{n}-id": rule.pk,
            f"rules-{n}-source": source.pk,
            f"rules-{n}-position": rule.position,
            f"rules-{n}-name": rule.name,
            f"rules-{n}-enabled": "on",
            f"rules-{n}-endpoint": rule.endpoint_id,
            f"rules-{n}-queue": rule.queue,
            f"rules-{n}-max_attempts": rule.max_attempts,
        }
    n = len(existing)
    data |= {
        f"rules-{n}-position": "",
        f"rules-{n}-name": "Deploys",
        f"rules-{n}-enabled": "on",
        f"rules-{n}-endpoint": personas.endpoint_a.pk,
        f"rules-{n}-queue": "deploy",
        f"rules-{n}-max_attempts": "4",
    }
    url = reverse("admin:todos_source_change", args=[source.pk])
    response = _admin(personas).post(url, data)
    assert response.status_code == 302, response.content.decode()[:3000]


def _run_create_rule(personas: Personas, source: Source) -> None:
    call_command(
        "create_rule",
        f"--source={source.slug}",
        f"--endpoint={personas.endpoint_a.slug}",
        "--queue=deploy",
        f"--match={json.dumps(MATCH)}",
        "--name=Deploys",
        "--title=Deploy {{ ref }}",
        "--template=Watch it.",
        "--max-attempts=4",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )


RULE_SURFACES = {
    "board": _add_rule_on_the_board,
    "admin": _add_rule_in_the_admin,
    "command": _run_create_rule,
}


@pytest.mark.parametrize("surface", RULE_SURFACES)
def test_every_way_in_appends_the_same_rule_after_the_last_one(
    personas: Personas, surface: str
) -> None:
    source = SourceFactory(owner=personas.alice, slug="gh")
    RuleFactory(source=source, endpoint=personas.endpoint_a, queue="first", position=10)

    RULE_SURFACES[surface](personas, source)

    rule = Rule.objects.get(source=source, queue="deploy")
    assert rule.position == 20
    assert (rule.endpoint_id, rule.name, rule.match, rule.max_attempts, rule.enabled) == (
        personas.endpoint_a.pk,
        "Deploys",
        MATCH,
        4,
        True,
    )
    assert (rule.title_template, rule.work_order_template) == ("Deploy {{ ref }}", "Watch it.")


def test_a_rule_added_on_its_source_page_is_appended_too(personas: Personas) -> None:
    source = SourceFactory(owner=personas.alice, slug="gh")
    RuleFactory(source=source, endpoint=personas.endpoint_a, queue="first", position=10)

    _add_rule_on_its_source_page(personas, source)

    rule = Rule.objects.get(source=source, queue="deploy")
    assert (rule.position, rule.name, rule.max_attempts, rule.match) == (20, "Deploys", 4, {})
