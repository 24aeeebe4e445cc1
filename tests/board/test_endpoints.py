"""Endpoints on the Board: the list, the vend wizard (key shown once), keys, revocation."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from switchboard.credentials import key_for_plaintext, mint_key
from switchboard.lib.actors import Actor
from switchboard.models import DRAIN_VERBS, Endpoint, EndpointKey
from tests.base import Personas
from tests.factories import EndpointFactory
from tests.reach import BOT, claimed, new_todo
from todos import lifecycle
from todos.models import Todo

pytestmark = pytest.mark.django_db

KEY_RE = re.compile(r"sbk_[A-Za-z0-9_-]{43}")


def vend(client: Client, slug: str = "ci-fixer", **extra: object) -> Any:
    data: dict[str, object] = {"name": "CI fixer", "slug": slug, "verbs": list(DRAIN_VERBS)}
    data.update(extra)
    return client.post(reverse("endpoint_new"), data, follow=True)


def test_the_list_shows_the_humans_endpoints_with_last_key_use(
    alice_client: Client, personas: Personas
) -> None:
    EndpointKey.objects.filter(endpoint=personas.endpoint_a).update(
        last_used_at="2026-11-01T10:20:00Z"
    )

    body = alice_client.get(reverse("endpoint_list")).content.decode()

    assert "agent-a" in body and "Alice&#x27;s agent" in body
    assert "2026-11-01 10:20" in body


def test_the_list_makes_the_same_queries_for_1_and_10_endpoints(
    alice_client: Client,
    personas: Personas,
    django_assert_num_queries: Callable[..., Any],
) -> None:
    # session, user, the endpoints with their key counts (one grouped query), their fleets (one
    # statement, todos/sql/fleet.sql), the rail's unread count
    with django_assert_num_queries(5):
        alice_client.get(reverse("endpoint_list"))
    for _ in range(9):
        mint_key(EndpointFactory(owner=personas.alice))
    with django_assert_num_queries(5):
        body = alice_client.get(reverse("endpoint_list")).content.decode()
    assert body.count('<tr class="row" ') == 10


def test_the_wizard_defaults_to_every_drain_verb(alice_client: Client) -> None:
    body = alice_client.get(reverse("endpoint_new")).content.decode()

    for verb in DRAIN_VERBS:
        assert re.search(rf'value="{verb}"[^>]*checked', body), verb


def test_vending_shows_the_key_once_with_client_configuration(
    alice_client: Client, personas: Personas
) -> None:
    response = vend(alice_client)

    body = response.content.decode()
    assert response.status_code == 200
    keys = set(KEY_RE.findall(body))
    assert len(keys) == 1
    key = keys.pop()
    found = key_for_plaintext(key)
    assert found is not None and found.endpoint.slug == "ci-fixer"
    assert found.endpoint.owner_id == personas.alice.id
    assert list(found.endpoint.verbs) == list(DRAIN_VERBS)
    assert "http://testserver/mcp/ci-fixer" in body
    # The key is in the card and its export line only; the snippets read $SWITCHBOARD_KEY.
    assert body.count(key) == 2 and f"export SWITCHBOARD_KEY={key}" in body
    assert "Authorization: Bearer $SWITCHBOARD_KEY" in body
    assert "&quot;Authorization&quot;: &quot;Bearer ${SWITCHBOARD_KEY}&quot;" in body  # .mcp.json
    assert "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://testserver/otlp/ci-fixer/v1/traces" in body
    assert "OTEL_EXPORTER_OTLP_TRACES_HEADERS=&quot;Authorization=Bearer%20$SWITCHBOARD_KEY" in body
    # Post-redirect-get: the POST answered a redirect, and the key left the session.
    assert response.redirect_chain == [(reverse("endpoint_key_shown", args=["ci-fixer"]), 302)]
    assert "no-store" in response["Cache-Control"]
    assert response["Referrer-Policy"] == "no-referrer"


def test_the_endpoint_page_never_shows_the_key_again(alice_client: Client) -> None:
    key = KEY_RE.findall(vend(alice_client).content.decode())[0]

    reload = alice_client.get(reverse("endpoint_key_shown", args=["ci-fixer"]), follow=True)
    assert "shown only once" in reload.content.decode()
    assert Endpoint.objects.filter(slug="ci-fixer").count() == 1  # the reload minted nothing
    assert EndpointKey.objects.filter(endpoint__slug="ci-fixer").count() == 1
    pages = [
        reload,
        alice_client.get(reverse("endpoint_detail", args=["ci-fixer"])),
        alice_client.get(reverse("endpoint_list")),
        alice_client.get(reverse("endpoint_revoke", args=["ci-fixer"])),
    ]

    for page in pages:
        body = page.content.decode()
        assert page.status_code == 200
        assert key not in body and not KEY_RE.search(body)
    assert key[:12] + "…" in pages[0].content.decode()  # only the prefix


def test_the_wizard_keeps_the_chosen_verbs_in_order(alice_client: Client) -> None:
    vend(alice_client, verbs=["complete", "claim_next"])

    assert Endpoint.objects.get(slug="ci-fixer").verbs == ["claim_next", "complete"]


@pytest.mark.parametrize("slug", ["agent-b", "Not A Slug", ""])
def test_a_taken_or_malformed_slug_is_refused_on_the_form(
    alice_client: Client, personas: Personas, slug: str
) -> None:
    response = vend(alice_client, slug=slug)

    body = response.content.decode()
    assert response.status_code == 200
    assert 'class="errorlist' in body and not KEY_RE.search(body)
    assert not Endpoint.objects.filter(owner=personas.alice, name="CI fixer").exists()


def test_adding_a_key_shows_it_once_and_keeps_the_old_one(
    alice_client: Client, personas: Personas
) -> None:
    response = alice_client.post(reverse("endpoint_mint_key", args=["agent-a"]), follow=True)

    key = KEY_RE.findall(response.content.decode())[0]
    assert key != personas.key_a
    assert key_for_plaintext(key) is not None and key_for_plaintext(personas.key_a) is not None
    assert EndpointKey.objects.filter(endpoint=personas.endpoint_a).count() == 2


def test_revoking_a_key_stops_it(alice_client: Client, personas: Personas) -> None:
    key = EndpointKey.objects.get(endpoint=personas.endpoint_a)

    url = reverse("endpoint_revoke_key", args=["agent-a", key.pk])
    asked = alice_client.post(url)  # the key table's button asks first
    assert asked.status_code == 200 and "Yes, revoke key" in asked.content.decode()
    assert "last live key" in asked.content.decode()
    assert key_for_plaintext(personas.key_a) is not None  # asking changes nothing

    response = alice_client.post(url, {"confirm": "yes"})

    assert response.status_code == 302
    assert key_for_plaintext(personas.key_a) is None
    page = alice_client.get(response["Location"]).content.decode()
    assert "Revoked key" in page and "revoked</span>" in page


def test_revoking_the_endpoint_says_how_many_todos_it_dead_letters(
    alice_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a.id
    pending = new_todo(ep, "work").id
    running = claimed(ep, "work", owner=BOT, claimant="harness/run-1").todo.id
    retrying = claimed(ep, "work", owner=BOT, claimant="harness/run-1").todo.id
    lifecycle.fail(ep, retrying, owner=BOT, retryable=True)
    finished = claimed(ep, "work", owner=BOT, claimant="harness/run-1").todo.id
    lifecycle.complete(ep, finished, owner=BOT)
    new_todo(personas.endpoint_b.id, "work")  # bob's: not counted

    confirm = alice_client.get(reverse("endpoint_revoke", args=["agent-a"])).content.decode()
    assert "3 unfinished todos" in confirm
    assert Endpoint.objects.get(id=ep).revoked_at is None  # asking changes nothing

    unconfirmed = alice_client.post(reverse("endpoint_revoke", args=["agent-a"]))
    assert unconfirmed.status_code == 200 and "Yes, revoke agent-a" in unconfirmed.content.decode()
    assert Endpoint.objects.get(id=ep).revoked_at is None  # a POST without the answer asks again

    done = alice_client.post(
        reverse("endpoint_revoke", args=["agent-a"]), {"confirm": "yes"}, follow=True
    )

    assert "dead-lettered 3 unfinished todos" in done.content.decode()
    assert Endpoint.objects.get(id=ep).revoked_at is not None
    assert key_for_plaintext(personas.key_a) is None
    for todo_id in (pending, running, retrying):
        assert Todo.objects.get(id=todo_id).dead_letter
    assert Todo.objects.get(id=finished).state == "completed"


def test_a_revoked_endpoint_gets_no_new_key(alice_client: Client, personas: Personas) -> None:
    lifecycle.revoke_endpoint(personas.alice.id, personas.endpoint_a.id)

    response = alice_client.post(reverse("endpoint_mint_key", args=["agent-a"]), follow=True)

    assert "would never work" in response.content.decode()
    assert not KEY_RE.search(response.content.decode())
    assert EndpointKey.objects.filter(endpoint=personas.endpoint_a).count() == 1


def test_the_wizard_offers_a2a_and_the_page_shows_its_url(alice_client: Client) -> None:
    body = alice_client.get(reverse("endpoint_new")).content.decode()
    for verb in ("request_input", "reject", "a2a"):
        assert re.search(rf'value="{verb}"', body), verb
        assert not re.search(rf'value="{verb}"[^>]*checked', body), verb

    vend(alice_client, "front", verbs=[*DRAIN_VERBS, "request_input", "reject", "a2a"])
    endpoint = Endpoint.objects.get(slug="front")
    assert endpoint.verbs[-3:] == ["request_input", "reject", "a2a"]
    page = alice_client.get(reverse("endpoint_detail", args=["front"])).content.decode()
    assert "http://testserver/a2a/front" in page
    vend(alice_client, "drainer")
    page = alice_client.get(reverse("endpoint_detail", args=["drainer"])).content.decode()
    assert "/a2a/" not in page


# --- push rings ---------------------------------------------------------------------------------

PUSH_SECRET_RE = re.compile(r"sbp_[A-Za-z0-9_-]{43}")


def test_vending_with_a_push_url_shows_the_push_secret_once(alice_client: Client) -> None:
    response = vend(alice_client, push_url="https://agent.example/ring")

    (secret,) = set(PUSH_SECRET_RE.findall(response.content.decode()))
    endpoint = Endpoint.objects.get(slug="ci-fixer")
    assert (endpoint.push_url, endpoint.push_secret) == ("https://agent.example/ring", secret)
    assert "no-store" in response["Cache-Control"]
    page = alice_client.get(reverse("endpoint_detail", args=["ci-fixer"])).content.decode()
    assert secret not in page and "https://agent.example/ring" in page
    assert not PUSH_SECRET_RE.search(vend(alice_client, slug="no-push").content.decode())


def test_the_endpoint_page_lists_pushes_and_the_test_ring_button_queues_one(
    alice_client: Client, personas: Personas
) -> None:
    vend(alice_client, push_url="https://agent.example/ring")
    endpoint = Endpoint.objects.get(slug="ci-fixer")
    todo = new_todo(endpoint.id)
    assert lifecycle.ring(todo.id, reason="ready", ringer=Actor.doorbell()) is not None

    response = alice_client.post(reverse("endpoint_push_test", args=["ci-fixer"]), follow=True)

    body = response.content.decode()
    assert "Test ring queued" in body
    assert "Send test ring" in body
    assert todo.id in body and body.count('<span class="badge state-pending">queued</span>') == 2
    assert sorted(endpoint.push_attempts.values_list("reason", flat=True)) == ["ready", "test"]

    again = alice_client.post(reverse("endpoint_push_test", args=["ci-fixer"]), follow=True)
    assert "A test ring was queued less than 10 s ago" in again.content.decode()
    assert endpoint.push_attempts.filter(reason="test").count() == 1


def test_a_test_ring_without_a_push_url_is_refused_and_bobs_slug_is_unknown(
    alice_client: Client, personas: Personas
) -> None:
    response = alice_client.post(reverse("endpoint_push_test", args=["agent-a"]), follow=True)
    assert "has no push URL" in response.content.decode()
    assert not personas.endpoint_a.push_attempts.exists()
    assert alice_client.post(reverse("endpoint_push_test", args=["agent-b"])).status_code == 404
    foreign = alice_client.post(reverse("endpoint_rotate_push_secret", args=["agent-b"]))
    assert foreign.status_code == 404


def test_rotating_the_push_secret_asks_first_then_shows_the_new_one_once(
    alice_client: Client,
) -> None:
    vend(alice_client, push_url="https://agent.example/ring")
    old = Endpoint.objects.get(slug="ci-fixer").push_secret
    url = reverse("endpoint_rotate_push_secret", args=["ci-fixer"])

    question = alice_client.post(url)  # the endpoint page's button: the question, nothing rotated
    assert "Yes, rotate the push secret" in question.content.decode()
    assert Endpoint.objects.get(slug="ci-fixer").push_secret == old
    (current,) = re.findall(r'name="current" value="([0-9a-f]+)"', question.content.decode())

    confirmed = alice_client.post(url, {"confirm": "yes", "current": current})
    assert (confirmed.status_code, confirmed["Location"]) == (302, url)  # POST-redirect-GET
    response = alice_client.get(url)
    (shown,) = set(PUSH_SECRET_RE.findall(response.content.decode()))
    assert shown != old and Endpoint.objects.get(slug="ci-fixer").push_secret == shown
    assert "no-store" in response["Cache-Control"]
    assert response["Referrer-Policy"] == "no-referrer"

    reload = alice_client.get(url, follow=True)  # shown once: a reload finds nothing
    assert not PUSH_SECRET_RE.findall(reload.content.decode())
    assert "shown only once" in reload.content.decode()
    replay = alice_client.post(url, {"confirm": "yes", "current": current}, follow=True)
    assert "already rotated" in replay.content.decode()  # a re-posted form rotates nothing
    assert Endpoint.objects.get(slug="ci-fixer").push_secret == shown
