"""The tenancy admin: humans, endpoints (revoked through the lifecycle, never deleted), keys
(shown once at minting, the hash never) and runtime settings (validated, in effect at once)."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.test import Client, override_settings
from django.urls import reverse

from attempts.models import TodoAttempt
from switchboard import credentials, runtime_settings
from switchboard.credentials import key_for_plaintext
from switchboard.models import Endpoint, EndpointKey, Setting
from tests.admin_helpers import admin_messages, admin_page, admin_url
from tests.base import Personas
from tests.factories import HumanFactory
from tests.reach import BOT, claimed
from todos import lifecycle
from todos.models import Todo

pytestmark = pytest.mark.django_db

KEY_RE = re.compile(r"sbk_[A-Za-z0-9_-]{43}")


# --- keys: shown once, hash never -----------------------------------------------------------------


def _assert_no_secret_material(html: str, plaintext: str) -> None:
    assert plaintext not in html
    assert plaintext[len("sbk_") + 8 :] not in html
    for key in EndpointKey.objects.all():
        assert bytes(key.key_hash).hex() not in html


def test_key_is_shown_once_at_minting(admin_client: Client, personas: Personas) -> None:
    endpoint = personas.endpoint_a
    response = admin_client.post(admin_url("admin:switchboard_endpoint_mint_key", endpoint.pk))

    assert response.status_code == 200
    assert response["Cache-Control"].startswith("max-age=0")
    assert "no-store" in response["Cache-Control"]
    shown = KEY_RE.findall(response.content.decode())
    assert len(set(shown)) == 1
    plaintext = shown[0]
    found = key_for_plaintext(plaintext)
    assert found is not None and found.endpoint_id == endpoint.pk

    change = admin_page(admin_client, admin_url("admin:switchboard_endpoint_change", endpoint.pk))
    assert found.prefix in change
    _assert_no_secret_material(change, plaintext)
    for url in (
        reverse("admin:switchboard_endpointkey_changelist"),
        admin_url("admin:switchboard_endpointkey_change", found.pk),
        reverse("admin:switchboard_endpoint_changelist"),
    ):
        _assert_no_secret_material(admin_page(admin_client, url), plaintext)


def test_minting_needs_a_post(admin_client: Client, personas: Personas) -> None:
    url = admin_url("admin:switchboard_endpoint_mint_key", personas.endpoint_a.pk)
    before = EndpointKey.objects.count()

    assert admin_client.get(url).status_code == 405
    assert EndpointKey.objects.count() == before


def test_minting_for_a_revoked_endpoint_is_refused(
    admin_client: Client, personas: Personas
) -> None:
    lifecycle.revoke_endpoint(personas.alice.id, personas.endpoint_a.id)
    before = EndpointKey.objects.count()

    response = admin_client.post(
        admin_url("admin:switchboard_endpoint_mint_key", personas.endpoint_a.pk)
    )

    assert response.status_code == 302
    assert EndpointKey.objects.count() == before
    assert not KEY_RE.search(response.content.decode())


def test_mint_action_shows_one_new_key_per_selected_endpoint(
    admin_client: Client, personas: Personas
) -> None:
    endpoints = [personas.endpoint_a, personas.endpoint_b]
    response = admin_client.post(
        reverse("admin:switchboard_endpoint_changelist"),
        {"action": "mint_keys", "_selected_action": [e.pk for e in endpoints], "index": "0"},
    )

    assert response.status_code == 200
    shown = set(KEY_RE.findall(response.content.decode()))
    owners = {key_for_plaintext(k).endpoint_id for k in shown}  # type: ignore[union-attr]
    assert owners == {e.pk for e in endpoints}


def test_adding_an_endpoint_mints_its_first_key_and_shows_it_once(
    admin_client: Client, personas: Personas
) -> None:
    response = admin_client.post(
        reverse("admin:switchboard_endpoint_add"),
        {
            "owner": personas.bob.pk,
            "slug": "night-shift",
            "name": "Night shift",
            "verbs": ["claim_next", "list_todos", "complete"],
            "push_url": "",
            "keys-TOTAL_FORMS": "0",
            "keys-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 200, response.content.decode()[:2000]
    endpoint = Endpoint.objects.get(slug="night-shift")
    assert endpoint.owner == personas.bob
    assert endpoint.verbs == ["list_todos", "claim_next", "complete"]
    (plaintext,) = set(KEY_RE.findall(response.content.decode()))
    assert key_for_plaintext(plaintext).endpoint_id == endpoint.pk  # type: ignore[union-attr]
    change = admin_page(admin_client, admin_url("admin:switchboard_endpoint_change", endpoint.pk))
    _assert_no_secret_material(change, plaintext)


@pytest.mark.parametrize(
    ("given", "stored", "said"),
    [
        ("5.5", Decimal("5.5"), None),
        ("", None, None),
        ("-1", None, "must be a non-negative number of US dollars"),
        ("2000000", None, "must be at most 1000000"),
    ],
)
def test_adding_an_endpoint_keeps_its_daily_budget_checked_as_on_edit(
    admin_client: Client, personas: Personas, given: str, stored: Decimal | None, said: str | None
) -> None:
    """The add form offers the budget: it is stored (it was dropped, the endpoint made without
    one) or refused on its field, by the rules the edit form and the queue budgets follow."""
    add = reverse("admin:switchboard_endpoint_add")
    form = {
        "owner": personas.bob.pk,
        "slug": "budgeted",
        "name": "Budgeted",
        "verbs": ["claim_next"],
        "daily_budget_usd": given,
        "keys-TOTAL_FORMS": "0",
        "keys-INITIAL_FORMS": "0",
    }

    response = admin_client.post(add, form)

    if said is None:
        assert response.status_code == 200  # the new key's show-once page
        assert Endpoint.objects.get(slug="budgeted").daily_budget_usd == stored
        return
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["daily_budget_usd"] and said in errors["daily_budget_usd"][0]
    assert not Endpoint.objects.filter(slug="budgeted").exists()
    change = admin_url("admin:switchboard_endpoint_change", personas.endpoint_b.pk)
    edited = admin_client.post(
        change,
        {
            "name": "Bob's agent",
            "verbs": ["claim_next"],
            "daily_budget_usd": given,
            "keys-TOTAL_FORMS": "0",
            "keys-INITIAL_FORMS": "0",
        },
    )
    assert said in edited.context["adminform"].form.errors["daily_budget_usd"][0]


@override_settings(SWITCHBOARD_PUSH_ALLOW_PRIVATE=False)
@pytest.mark.parametrize("push_url", ["http://127.0.0.1:9/x", "ftp://example.com/x"])
def test_a_push_url_every_ring_would_be_refused_is_refused_on_add_and_edit(
    admin_client: Client, personas: Personas, push_url: str
) -> None:
    """The admin applies the sender's guard as the other surfaces do (it stored such a URL
    and minted a push secret for it), with the sender's reason on the field."""
    with pytest.raises(ValidationError) as refused:
        credentials.check_push_url(push_url)
    (said,) = refused.value.message_dict["push_url"]
    keys = {"keys-TOTAL_FORMS": "0", "keys-INITIAL_FORMS": "0"}
    form = {"name": "Pusher", "verbs": ["claim_next"], "push_url": push_url, **keys}

    added = admin_client.post(
        reverse("admin:switchboard_endpoint_add"),
        form | {"owner": personas.bob.pk, "slug": "pusher"},
    )
    edited = admin_client.post(
        admin_url("admin:switchboard_endpoint_change", personas.endpoint_b.pk), form
    )

    for response in (added, edited):
        assert response.status_code == 200
        assert response.context["adminform"].form.errors == {"push_url": [said]}
    assert not Endpoint.objects.filter(slug="pusher").exists()
    personas.endpoint_b.refresh_from_db()
    assert (personas.endpoint_b.push_url, personas.endpoint_b.push_secret) == (None, "")


def test_the_add_form_offers_the_drain_verbs_checked(admin_client: Client) -> None:
    html = admin_page(admin_client, reverse("admin:switchboard_endpoint_add"))
    checked = re.findall(r'<input type="checkbox" name="verbs" value="(\w+)"[^>]*checked', html)
    assert set(checked) == {
        "list_todos",
        "get_todo",
        "claim_next",
        "claim",
        "heartbeat",
        "complete",
        "fail",
        "release",
    }


def test_keys_cannot_be_added_changed_or_deleted_directly(
    admin_client: Client, personas: Personas
) -> None:
    key = EndpointKey.objects.filter(endpoint=personas.endpoint_a).get()

    assert admin_client.get(reverse("admin:switchboard_endpointkey_add")).status_code == 403
    assert (
        admin_client.post(
            admin_url("admin:switchboard_endpointkey_change", key.pk), {"prefix": "sbk_x"}
        ).status_code
        == 403
    )
    assert (
        admin_client.post(
            admin_url("admin:switchboard_endpointkey_delete", key.pk), {"post": "yes"}
        ).status_code
        == 403
    )
    key.refresh_from_db()
    assert key.prefix.startswith("sbk_") and key.prefix != "sbk_x"


def test_revoke_key_action_revokes_only_the_selected_keys(
    admin_client: Client, personas: Personas
) -> None:
    key_a = EndpointKey.objects.filter(endpoint=personas.endpoint_a).get()

    response = admin_client.post(
        reverse("admin:switchboard_endpointkey_changelist"),
        {"action": "revoke_keys", "_selected_action": [key_a.pk], "index": "0"},
    )

    assert response.status_code == 302
    assert key_for_plaintext(personas.key_a) is None
    assert key_for_plaintext(personas.key_b) is not None
    assert admin_messages(response) == ["Revoked 1 key."]


# --- endpoints: revocation through the lifecycle --------------------------------------------------


def test_revoke_endpoint_asks_first_then_dead_letters_its_unfinished_todos(
    admin_client: Client, personas: Personas
) -> None:
    endpoint = personas.endpoint_a
    pending = lifecycle.create(endpoint.id, queue="work", title="pending").id
    held = claimed(endpoint.id, "work", owner=BOT).todo.id
    done = claimed(endpoint.id, "work", owner=BOT).todo.id
    lifecycle.complete(endpoint.id, done, owner=BOT)
    url = reverse("admin:switchboard_endpoint_changelist")
    action = {"action": "revoke_endpoints", "_selected_action": [endpoint.pk]}

    asked = admin_client.post(url, {**action, "index": "0"})

    assert asked.status_code == 200
    assert "2 unfinished todos" in asked.content.decode()
    endpoint.refresh_from_db()
    assert endpoint.revoked_at is None

    confirmed = admin_client.post(url, {**action, "post": "yes"})

    assert confirmed.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.revoked_at is not None
    states = dict(Todo.objects.filter(endpoint=endpoint).values_list("id", "state"))
    assert states == {pending: "failed", held: "failed", done: "completed"}
    assert admin_messages(confirmed) == ["Revoked agent-a; dead-lettered 2 unfinished todos."]
    assert key_for_plaintext(personas.key_a) is None
    attempt = TodoAttempt.objects.get(todo_id=held)
    assert (attempt.outcome, attempt.disposition) == ("revoked", "dead_lettered")


def test_endpoints_cannot_be_deleted(admin_client: Client, personas: Personas) -> None:
    url = admin_url("admin:switchboard_endpoint_delete", personas.endpoint_a.pk)
    assert admin_client.post(url, {"post": "yes"}).status_code == 403
    assert Endpoint.objects.filter(pk=personas.endpoint_a.pk).exists()


def test_the_slug_of_an_existing_endpoint_is_read_only(
    admin_client: Client, personas: Personas
) -> None:
    html = admin_page(
        admin_client, admin_url("admin:switchboard_endpoint_change", personas.endpoint_a.pk)
    )
    assert 'name="slug"' not in html
    assert 'name="name"' in html


# --- runtime settings -----------------------------------------------------------------------------


def test_setting_value_is_validated_against_its_bounds(admin_client: Client) -> None:
    url = reverse("admin:switchboard_setting_add")

    refused = admin_client.post(url, {"key": "retry_base_seconds", "value": "0"})

    assert refused.status_code == 200
    assert "retry_base_seconds must be between 1 and 86400, not 0" in refused.content.decode()
    assert not Setting.objects.exists()

    not_int = admin_client.post(url, {"key": "retry_base_seconds", "value": '"ten"'})
    assert "must be an integer" in not_int.content.decode()


def test_saving_a_setting_takes_effect_at_once(
    admin_client: Client, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    assert runtime_settings.current().retry_base_seconds == 30

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:switchboard_setting_add"),
            {"key": "retry_base_seconds", "value": "45"},
        )

    assert response.status_code == 302
    assert runtime_settings.current().retry_base_seconds == 45

    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            admin_url("admin:switchboard_setting_delete", "retry_base_seconds"),
            {"post": "yes"},
        )

    assert runtime_settings.current().retry_base_seconds == 30


def test_setting_page_shows_the_default_beside_the_value(admin_client: Client) -> None:
    runtime_settings.put("retry_max_seconds", 120)

    html = admin_page(
        admin_client, admin_url("admin:switchboard_setting_change", "retry_max_seconds")
    )

    assert 'value="120"' in html
    assert "3600" in html  # the default
    assert "Longest backoff between retries." in html


def test_a_setting_cannot_be_added_twice(admin_client: Client) -> None:
    runtime_settings.put("retry_base_seconds", 40)

    response = admin_client.post(
        reverse("admin:switchboard_setting_add"), {"key": "retry_base_seconds", "value": "50"}
    )

    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    assert Setting.objects.get().value == 40


# --- configuration goes through its writers -------------------------------------------------------


def _endpoint_change(endpoint: Endpoint, **changes: Any) -> dict[str, Any]:
    keys = list(EndpointKey.objects.filter(endpoint=endpoint).order_by("-created_at"))
    data: dict[str, Any] = {
        "name": endpoint.name,
        "verbs": list(endpoint.verbs),
        "push_url": endpoint.push_url or "",
        "keys-TOTAL_FORMS": str(len(keys)),
        "keys-INITIAL_FORMS": str(len(keys)),
        **{f"keys-{n}-id": key.pk for n, key in enumerate(keys)},
        **{f"keys-{n}-endpoint": endpoint.pk for n in range(len(keys))},
    }
    data.update(changes)
    return data


def test_editing_an_endpoint_stores_its_verbs_once_each_in_order_and_keeps_owner_and_slug(
    admin_client: Client, personas: Personas
) -> None:
    endpoint = personas.endpoint_a
    url = admin_url("admin:switchboard_endpoint_change", endpoint.pk)
    html = admin_page(admin_client, url)
    assert 'name="owner"' not in html and 'name="slug"' not in html

    response = admin_client.post(
        url,
        _endpoint_change(
            endpoint,
            name="Renamed",
            verbs=["release", "claim_next", "release"],
            owner=personas.bob.pk,
            slug="moved",
        ),
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    endpoint.refresh_from_db()
    assert (endpoint.name, endpoint.verbs, endpoint.owner, endpoint.slug) == (
        "Renamed",
        ["claim_next", "release"],
        personas.alice,
        "agent-a",
    )


# --- the push secret: rotated as on the Board, shown once ----------------------------------------

PUSH_SECRET_RE = re.compile(r"sbp_[A-Za-z0-9_-]{43}")


def _pushing(endpoint: Endpoint) -> str:
    """Give ``endpoint`` a push URL (minting its push secret); the secret."""
    credentials.update_endpoint(
        endpoint, name=endpoint.name, verbs=endpoint.verbs, push_url="https://agent.example/ring"
    )
    return Endpoint.objects.get(pk=endpoint.pk).push_secret


def test_rotating_the_push_secret_asks_first_then_shows_the_new_one_once(
    admin_client: Client, personas: Personas
) -> None:
    endpoint = personas.endpoint_a
    old = _pushing(endpoint)
    url = admin_url("admin:switchboard_endpoint_rotate_push_secret", endpoint.pk)
    change = admin_page(admin_client, admin_url("admin:switchboard_endpoint_change", endpoint.pk))
    assert f'action="{url}"' in change and "Rotate push secret…" in change
    assert admin_client.get(url).status_code == 405

    question = admin_client.post(url)

    assert question.status_code == 200
    asked = question.content.decode()
    assert "Yes, rotate the push secret" in asked and "https://agent.example/ring" in asked
    assert not PUSH_SECRET_RE.search(asked)
    assert Endpoint.objects.get(pk=endpoint.pk).push_secret == old  # asking changed nothing
    (current,) = re.findall(r'name="current" value="([0-9a-f]+)"', asked)

    answered = admin_client.post(url, {"post": "yes", "current": current})

    assert answered.status_code == 200
    assert "no-store" in answered["Cache-Control"]
    (shown,) = set(PUSH_SECRET_RE.findall(answered.content.decode()))
    assert shown != old and Endpoint.objects.get(pk=endpoint.pk).push_secret == shown
    assert "the old secret no longer verifies them" in answered.content.decode()
    assert "Rotated the push secret." in admin_page(
        admin_client, admin_url("admin:switchboard_endpoint_history", endpoint.pk)
    )

    # The answer sent again (a reload of the page that showed it) rotates and shows nothing.
    reload = admin_client.post(url, {"post": "yes", "current": current})
    assert reload.status_code == 302
    assert not PUSH_SECRET_RE.search(reload.content.decode())
    assert admin_messages(reload)[-1].startswith(
        "The push secret of agent-a was already rotated from this page;"
    )
    assert Endpoint.objects.get(pk=endpoint.pk).push_secret == shown
    later = admin_page(admin_client, admin_url("admin:switchboard_endpoint_change", endpoint.pk))
    assert not PUSH_SECRET_RE.search(later)


def test_rotating_a_push_secret_is_refused_without_a_push_url_or_the_change_permission(
    admin_client: Client, client: Client, personas: Personas
) -> None:
    plain = personas.endpoint_b  # no push URL, so no push secret
    url = admin_url("admin:switchboard_endpoint_rotate_push_secret", plain.pk)
    change = admin_page(admin_client, admin_url("admin:switchboard_endpoint_change", plain.pk))
    assert url not in change

    refused = admin_client.post(url, {"post": "yes", "current": "x"})

    assert refused.status_code == 302
    assert admin_messages(refused) == [
        "agent-b has no push URL (or is revoked): it has no push secret to rotate."
    ]
    assert Endpoint.objects.get(pk=plain.pk).push_secret == ""

    old = _pushing(personas.endpoint_a)
    viewer = HumanFactory(username="viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_endpoint"))
    client.force_login(viewer)
    mine = admin_url("admin:switchboard_endpoint_rotate_push_secret", personas.endpoint_a.pk)
    assert client.post(mine).status_code == 403
    assert Endpoint.objects.get(pk=personas.endpoint_a.pk).push_secret == old


def test_a_first_push_url_given_in_the_admin_shows_its_push_secret_once(
    admin_client: Client, personas: Personas
) -> None:
    """A push secret minted by the admin's add or edit was shown nowhere: rotating it on the
    Board was the only way to learn it."""
    added = admin_client.post(
        reverse("admin:switchboard_endpoint_add"),
        {
            "owner": personas.bob.pk,
            "slug": "pusher",
            "name": "Pusher",
            "verbs": ["claim_next"],
            "push_url": "https://agent.example/ring",
            "keys-TOTAL_FORMS": "0",
            "keys-INITIAL_FORMS": "0",
        },
    )
    assert added.status_code == 200
    page = added.content.decode()
    (key,) = set(KEY_RE.findall(page))
    assert key_for_plaintext(key).endpoint.slug == "pusher"  # type: ignore[union-attr]
    assert PUSH_SECRET_RE.findall(page) == [Endpoint.objects.get(slug="pusher").push_secret]

    endpoint = personas.endpoint_b
    change = admin_url("admin:switchboard_endpoint_change", endpoint.pk)
    edited = admin_client.post(
        change, _endpoint_change(endpoint, push_url="https://agent.example/b")
    )
    assert edited.status_code == 200
    secret = Endpoint.objects.get(pk=endpoint.pk).push_secret
    assert secret and PUSH_SECRET_RE.findall(edited.content.decode()) == [secret]

    endpoint.refresh_from_db()
    renamed = admin_client.post(change, _endpoint_change(endpoint, name="Renamed"))
    assert renamed.status_code == 302  # the secret is kept, not shown again
    assert Endpoint.objects.get(pk=endpoint.pk).push_secret == secret
