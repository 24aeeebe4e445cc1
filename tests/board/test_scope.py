"""Owner scope: bob gets 404 for alice's todos, drawers, actions, endpoints, sources, rules,
events and rule tester, and changes nothing; a foreign id answers exactly like an unknown one.
Staff are not special on the Board."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from switchboard.models import EndpointKey
from tests.base import Personas
from tests.factories import RuleFactory, SourceFactory
from tests.reach import BOT, claimed, new_todo
from todos.intake.sources import secret_fingerprint
from todos.models import Event, Rule, Source, Todo

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
ACTIONS = ["claim", "complete", "fail", "release", "retry", "extend", "cancel"]
UNKNOWN = "td_aaaaaaaaaaaaaaaaaaaa"
CSRF = re.compile(rb'"X-CSRFToken": "[^"]+"|name="csrfmiddlewaretoken" value="[^"]+"')


def same_page(body: bytes, todo_id: str) -> bytes:
    """The page with the id asked for and the per-response CSRF tokens taken out."""
    return CSRF.sub(b"CSRF", body.replace(todo_id.encode(), b"ID"))


@pytest.mark.parametrize("htmx", [False, True])
def test_bob_gets_404_for_alices_todo_page_and_drawer(
    bob_client: Client, personas: Personas, htmx: bool
) -> None:
    todo = new_todo(personas.endpoint_a.id, "work", title="alice's secret task")
    headers = HTMX if htmx else {}

    foreign = bob_client.get(reverse("todo_detail", args=[todo.id]), **headers)
    unknown = bob_client.get(reverse("todo_detail", args=[UNKNOWN]), **headers)

    assert foreign.status_code == unknown.status_code == 404
    assert b"alice&#x27;s secret task" not in foreign.content
    assert same_page(foreign.content, todo.id) == same_page(unknown.content, UNKNOWN)


@pytest.mark.parametrize("action", ACTIONS)
def test_bob_gets_404_for_every_action_on_alices_todo_and_nothing_changes(
    bob_client: Client, personas: Personas, action: str
) -> None:
    todo_id = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id
    before = Todo.objects.values().get(id=todo_id)

    response = bob_client.post(
        reverse("todo_action", args=[todo_id, action]),
        {"retryable": "on"},
        **HTMX,
    )

    assert response.status_code == 404
    assert "not found" in response.content.decode()
    assert Todo.objects.values().get(id=todo_id) == before


def test_alices_todos_never_appear_in_bobs_list_or_counts(
    bob_client: Client, personas: Personas
) -> None:
    todo = new_todo(personas.endpoint_a.id, "work")

    mine = bob_client.get(reverse("todo_list")).content.decode()
    by_slug = bob_client.get(reverse("todo_list"), {"endpoint": "agent-a"}).content.decode()

    assert todo.id not in mine and todo.id not in by_slug
    assert "all 0</span>" in mine and "all 0</span>" in by_slug
    assert "agent-a<" not in mine  # alice's endpoint is not in bob's filter either


@pytest.mark.parametrize(
    ("method", "name"),
    [
        ("get", "endpoint_detail"),
        ("get", "endpoint_revoke"),
        ("post", "endpoint_revoke"),
        ("post", "endpoint_mint_key"),
    ],
)
def test_bob_gets_404_for_alices_endpoint_pages_and_actions(
    bob_client: Client, personas: Personas, method: str, name: str
) -> None:
    keys = EndpointKey.objects.filter(endpoint=personas.endpoint_a).count()

    response = getattr(bob_client, method)(reverse(name, args=["agent-a"]))

    assert response.status_code == 404
    personas.endpoint_a.refresh_from_db()
    assert personas.endpoint_a.revoked_at is None
    assert EndpointKey.objects.filter(endpoint=personas.endpoint_a).count() == keys


def test_bob_cannot_revoke_alices_key_even_through_his_own_endpoint(
    bob_client: Client, personas: Personas
) -> None:
    key = EndpointKey.objects.get(endpoint=personas.endpoint_a)

    through_hers = bob_client.post(reverse("endpoint_revoke_key", args=["agent-a", key.pk]))
    through_his = bob_client.post(reverse("endpoint_revoke_key", args=["agent-b", key.pk]))

    assert through_hers.status_code == through_his.status_code == 404
    key.refresh_from_db()
    assert key.revoked_at is None


def test_alices_endpoints_are_not_in_bobs_list(bob_client: Client, personas: Personas) -> None:
    body = bob_client.get(reverse("endpoint_list")).content.decode()

    assert "agent-b" in body and "agent-a<" not in body and "Alice" not in body


# --- sources, rules, events, the rule tester --------------------------------------------------

SOURCE_PROBES = [
    ("get", "source_detail", "source"),
    ("post", "source_rotate", "source"),
    ("post", "source_verify", "source"),
    ("get", "source_test", "source"),
    ("post", "source_test", "source"),
    ("get", "source_event", "event"),
    ("get", "rule_new", "source"),
    ("post", "rule_new", "source"),
    ("get", "rule_edit", "rule"),
    ("post", "rule_edit", "rule"),
    ("get", "rule_delete", "rule"),
    ("post", "rule_delete", "rule"),
    ("post", "rule_enable", "rule"),
    ("post", "rule_disable", "rule"),
]


def alices_source(personas: Personas) -> tuple[Source, Rule, Event]:
    source = SourceFactory(owner=personas.alice, slug="alice-hooks", name="Alice's hooks")
    rule = RuleFactory(
        source=source, endpoint=personas.endpoint_a, name="alice's rule", queue="q", enabled=False
    )
    event = Event.objects.create(
        source=source, disposition="dropped", payload={"note": "alice's payload"}
    )
    return source, rule, event


def snapshot(source: Source) -> tuple[object, ...]:
    return (
        Source.objects.values().get(pk=source.pk),
        list(Rule.objects.filter(source=source).values()),
        Event.objects.filter(source=source).count(),
        Todo.objects.count(),
    )


def probe_args(kind: str, slug: str, rule: Rule, event: Event) -> list[object]:
    return {"source": [slug], "rule": [slug, rule.pk], "event": [slug, event.pk]}[kind]


@pytest.mark.parametrize("who", ["bob", "admin"])
@pytest.mark.parametrize(("method", "name", "kind"), SOURCE_PROBES)
def test_only_the_owner_reaches_a_source_its_rules_events_and_tester(
    client: Client, personas: Personas, who: str, method: str, name: str, kind: str
) -> None:
    source, rule, event = alices_source(personas)
    client.force_login(personas.bob if who == "bob" else personas.admin)
    before = snapshot(source)
    data = {
        "current": secret_fingerprint(source.secret),  # right, so only scope can refuse
        "verify": "off",
        "headers": "",
        "payload": "{}",
        "name": "taken over",
        "endpoint": str(personas.endpoint_a.id),
        "queue": "q",
        "match": "{}",
        "max_attempts": "5",
        "enabled": "on",
    }

    foreign = getattr(client, method)(
        reverse(name, args=probe_args(kind, "alice-hooks", rule, event)), data
    )
    unknown = getattr(client, method)(
        reverse(name, args=probe_args(kind, "no-such", rule, event)), data
    )

    assert foreign.status_code == unknown.status_code == 404
    # The same page but for the slug asked for, which it names, and the rail's token.
    assert same_page(foreign.content, "alice-hooks") == same_page(unknown.content, "no-such")
    assert snapshot(source) == before


@pytest.mark.parametrize(("method", "name", "kind"), [p for p in SOURCE_PROBES if p[2] != "source"])
def test_bob_cannot_reach_alices_rule_or_event_through_his_own_source(
    bob_client: Client, personas: Personas, method: str, name: str, kind: str
) -> None:
    source, rule, event = alices_source(personas)
    SourceFactory(owner=personas.bob, slug="bob-hooks")
    before = snapshot(source)

    response = getattr(bob_client, method)(
        reverse(name, args=probe_args(kind, "bob-hooks", rule, event))
    )

    assert response.status_code == 404
    assert snapshot(source) == before


def test_alices_sources_are_not_in_bobs_list(bob_client: Client, personas: Personas) -> None:
    alices_source(personas)
    SourceFactory(owner=personas.bob, slug="bob-hooks")

    body = bob_client.get(reverse("sources")).content.decode()

    assert "bob-hooks" in body and "alice-hooks" not in body and "Alice" not in body
