"""Endpoints and their keys, written only by ``switchboard.credentials``: creation with the first
key, edits, verbs normalised once, minting (``sbk_`` + 32 random bytes, shown once, stored as
SHA-256 only), revocation, lookup; and every way in (Board, admin, command, demo) storing the same
endpoint for the same input."""

from __future__ import annotations

import base64
import hashlib
import io
import re
import secrets
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from pytest_django import DjangoAssertNumQueries

from switchboard import credentials, demo
from switchboard.credentials import key_for_plaintext, mint_key, touch_key
from switchboard.models import DRAIN_VERBS, Endpoint, EndpointKey, Verb
from tests.base import Personas
from tests.factories import EndpointFactory
from todos import lifecycle

pytestmark = pytest.mark.django_db

KEY_RE = re.compile(r"^sbk_[A-Za-z0-9_-]{43}$")


def _raw_row(key_id: int) -> dict[str, Any]:
    with connection.cursor() as cur:
        cur.execute("SELECT * FROM endpoint_keys WHERE id = %s", [key_id])
        assert cur.description is not None
        names = [col.name for col in cur.description]
        row = cur.fetchone()
    assert row is not None
    return dict(zip(names, row, strict=True))


def _last_used_at(key: EndpointKey) -> Any:
    with connection.cursor() as cur:
        cur.execute("SELECT last_used_at FROM endpoint_keys WHERE id = %s", [key.pk])
        row = cur.fetchone()
    assert row is not None
    return row[0]


# --- minting ----------------------------------------------------------------------------------


def test_mint_key_returns_sbk_and_43_base64url_characters_of_32_random_bytes() -> None:
    _, plaintext = mint_key(EndpointFactory())

    assert KEY_RE.match(plaintext), plaintext
    assert len(base64.urlsafe_b64decode(plaintext[4:] + "=")) == 32


def test_mint_key_gives_a_different_key_each_time() -> None:
    endpoint = EndpointFactory()
    keys = {mint_key(endpoint)[1] for _ in range(20)}
    assert len(keys) == 20


def test_only_the_sha256_of_the_key_is_stored() -> None:
    key, plaintext = mint_key(EndpointFactory())
    row = _raw_row(key.pk)

    assert bytes(row["key_hash"]) == hashlib.sha256(plaintext.encode()).digest()
    secret_part = plaintext[len("sbk_") :]
    for column, value in row.items():
        if value is None:
            continue
        text = (
            bytes(value).decode("latin-1") if isinstance(value, memoryview | bytes) else str(value)
        )
        assert plaintext not in text, f"the plaintext key is stored in endpoint_keys.{column}"
        assert secret_part not in text, f"the key's secret is stored in endpoint_keys.{column}"


def test_the_display_prefix_is_sbk_and_eight_characters_of_the_key() -> None:
    key, plaintext = mint_key(EndpointFactory())
    row = _raw_row(key.pk)

    assert row["prefix"] == plaintext[:12]
    assert len(row["prefix"]) == 12
    assert str(key) == f"{plaintext[:12]}…"


# --- lookup -----------------------------------------------------------------------------------


def test_key_for_plaintext_finds_a_live_key_and_its_endpoint(personas: Personas) -> None:
    key = key_for_plaintext(personas.key_a)

    assert key is not None
    assert key.endpoint_id == personas.endpoint_a.id
    assert key.endpoint.owner == personas.alice


def test_key_for_plaintext_refuses_an_unknown_key(personas: Personas) -> None:
    unknown = "sbk_" + base64.urlsafe_b64encode(bytes(32)).rstrip(b"=").decode()
    assert KEY_RE.match(unknown)
    assert key_for_plaintext(unknown) is None
    # A live key with one character changed is unknown too.
    tampered = personas.key_a[:-1] + ("A" if personas.key_a[-1] != "A" else "B")
    assert key_for_plaintext(tampered) is None


def test_key_for_plaintext_refuses_a_revoked_key(personas: Personas) -> None:
    assert key_for_plaintext(personas.key_a) is not None
    EndpointKey.objects.filter(endpoint=personas.endpoint_a).update(revoked_at=timezone.now())

    assert key_for_plaintext(personas.key_a) is None
    assert key_for_plaintext(personas.key_b) is not None


def test_key_for_plaintext_refuses_a_key_of_a_revoked_endpoint(personas: Personas) -> None:
    assert key_for_plaintext(personas.key_a) is not None
    revoked = lifecycle.revoke_endpoint(personas.alice.pk, personas.endpoint_a.id)
    assert revoked.endpoint_revoked

    assert key_for_plaintext(personas.key_a) is None
    # The key row itself was not revoked: the endpoint's revocation alone refuses it.
    assert EndpointKey.objects.get(endpoint=personas.endpoint_a).revoked_at is None
    assert key_for_plaintext(personas.key_b) is not None


@pytest.mark.parametrize(
    "junk",
    [
        "",
        "not-a-key",
        "Bearer sbk_abc",
        "SBK_" + "a" * 43,
        "sbk" + "a" * 44,
        "sbk_" + "A" * 1_000_000,
        "x" * 10_000_000,
    ],
    ids=["empty", "no-prefix", "bearer", "upper-prefix", "no-underscore", "huge-key", "huge-junk"],
)
def test_key_for_plaintext_refuses_junk_without_a_query(
    personas: Personas, django_assert_num_queries: DjangoAssertNumQueries, junk: str
) -> None:
    with django_assert_num_queries(0):
        assert key_for_plaintext(junk) is None


@pytest.mark.parametrize("junk", ["sbk_", "sbk_\x00", "sbk_' OR 1=1 --", "sbk_é☃"])
def test_key_for_plaintext_refuses_a_short_or_odd_key_with_the_prefix(
    personas: Personas, junk: str
) -> None:
    assert key_for_plaintext(junk) is None


# --- last use ---------------------------------------------------------------------------------


def test_touch_key_records_the_first_use() -> None:
    key, _ = mint_key(EndpointFactory())
    assert _last_used_at(key) is None

    touch_key(key)

    assert _last_used_at(key) is not None


def test_touch_key_writes_at_most_once_a_minute() -> None:
    key, _ = mint_key(EndpointFactory())
    touch_key(key)
    first = _last_used_at(key)
    # Under a test transaction now() is fixed; set the first use 30 seconds back so a second
    # write would be visible as a change.
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE endpoint_keys SET last_used_at = now() - interval '30 seconds' WHERE id = %s",
            [key.pk],
        )
    recent = _last_used_at(key)
    assert recent < first

    touch_key(key)

    assert _last_used_at(key) == recent


def test_touch_key_writes_again_once_the_minute_has_passed() -> None:
    key, _ = mint_key(EndpointFactory())
    touch_key(key)
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE endpoint_keys SET last_used_at = now() - interval '2 minutes' WHERE id = %s",
            [key.pk],
        )
    stale = _last_used_at(key)

    touch_key(key)

    assert _last_used_at(key) > stale


def test_touch_key_leaves_other_keys_alone() -> None:
    key, _ = mint_key(EndpointFactory())
    other, _ = mint_key(key.endpoint)

    touch_key(key)

    assert _last_used_at(key) is not None
    assert _last_used_at(other) is None


# --- verbs: normalised once ---------------------------------------------------------------------


def test_verbs_are_stored_once_each_in_the_order_verb_declares_them() -> None:
    given = ["release", "claim_next", "release", "list_todos", "claim_next"]

    assert credentials.normalize_verbs(given) == ["list_todos", "claim_next", "release"]
    assert credentials.normalize_verbs(reversed(Verb.values)) == list(Verb.values)
    assert credentials.normalize_verbs([]) == []


def test_unknown_verbs_are_refused_by_name() -> None:
    with pytest.raises(ValidationError) as refused:
        credentials.normalize_verbs(["claim_next", "drop_tables", "Claim"])

    assert refused.value.messages == [
        f"unknown verbs: Claim, drop_tables; known: {', '.join(Verb.values)}"
    ]


# --- creating an endpoint -----------------------------------------------------------------------


def _rows() -> tuple[int, int]:
    return Endpoint.objects.count(), EndpointKey.objects.count()


def test_create_endpoint_stores_the_endpoint_with_one_working_key(personas: Personas) -> None:
    endpoint, key, plaintext = credentials.create_endpoint(
        personas.alice,
        name="Night shift",
        slug="night-shift",
        verbs=["complete", "claim_next", "complete"],
        push_url="https://agent.example.test/ring",
    )

    stored = Endpoint.objects.get(slug="night-shift")
    assert stored.pk == endpoint.pk
    assert (stored.owner, stored.name, stored.verbs, stored.push_url) == (
        personas.alice,
        "Night shift",
        ["claim_next", "complete"],
        "https://agent.example.test/ring",
    )
    assert stored.revoked_at is None
    assert list(stored.keys.all()) == [key]
    found = key_for_plaintext(plaintext)
    assert found is not None and found.pk == key.pk


def test_create_endpoint_stores_a_blank_push_url_as_none(personas: Personas) -> None:
    endpoint, _, _ = credentials.create_endpoint(
        personas.alice, name="A", slug="no-push", verbs=[], push_url=""
    )

    assert Endpoint.objects.get(pk=endpoint.pk).push_url is None


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"slug": "new"}, "slug", "reserved on the Board"),
        ({"slug": "agent-b"}, "slug", "Endpoint with this Slug already exists."),
        ({"slug": "Bad Slug"}, "slug", "Use lowercase letters"),
        ({"name": ""}, "name", "This field cannot be blank."),
        ({"verbs": ["claim_next", "drop_tables"]}, "verbs", "unknown verbs: drop_tables"),
        ({"push_url": "not a url"}, "push_url", "Enter a valid URL."),
    ],
)
def test_create_endpoint_refuses_bad_input_and_writes_nothing(
    personas: Personas, changes: dict[str, object], field: str, message: str
) -> None:
    given: dict[str, object] = {"name": "X", "slug": "fresh", "verbs": list(DRAIN_VERBS)}
    given.update(changes)
    before = _rows()

    with pytest.raises(ValidationError) as refused:
        credentials.create_endpoint(personas.alice, **given)  # type: ignore[arg-type]

    assert message in " ".join(refused.value.message_dict[field])
    assert _rows() == before


def test_an_endpoint_whose_first_key_cannot_be_stored_is_not_created(
    personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every key the same: the second endpoint's key collides with the first one's hash.
    monkeypatch.setattr(secrets, "token_bytes", lambda n: bytes(n))
    credentials.create_endpoint(personas.alice, name="One", slug="one", verbs=[])
    before = _rows()

    with pytest.raises(IntegrityError):
        credentials.create_endpoint(personas.alice, name="Two", slug="two", verbs=[])

    assert _rows() == before
    assert not Endpoint.objects.filter(slug="two").exists()


# --- editing an endpoint ------------------------------------------------------------------------


def test_update_endpoint_changes_name_verbs_and_push_url_only(personas: Personas) -> None:
    endpoint = personas.endpoint_a
    endpoint.slug = "renamed"  # neither the slug nor the owner is among what an edit stores
    endpoint.owner = personas.bob

    credentials.update_endpoint(
        endpoint, name="Renamed", verbs=["heartbeat", "claim", "claim"], push_url=""
    )

    stored = Endpoint.objects.get(pk=endpoint.pk)
    assert (stored.slug, stored.owner, stored.name, stored.verbs, stored.push_url) == (
        "agent-a",
        personas.alice,
        "Renamed",
        ["claim", "heartbeat"],
        None,
    )


def test_update_endpoint_refuses_an_unknown_verb_and_changes_nothing(personas: Personas) -> None:
    endpoint = personas.endpoint_a

    with pytest.raises(ValidationError) as refused:
        credentials.update_endpoint(endpoint, name="X", verbs=["sudo"], push_url=None)

    assert "verbs" in refused.value.message_dict
    stored = Endpoint.objects.get(pk=endpoint.pk)
    assert (stored.name, stored.verbs) == ("Alice's agent", list(DRAIN_VERBS))


# --- minting and revoking keys ------------------------------------------------------------------


def test_mint_key_refuses_a_revoked_endpoint_even_through_a_stale_copy(
    personas: Personas,
) -> None:
    stale = Endpoint.objects.get(pk=personas.endpoint_a.pk)
    lifecycle.revoke_endpoint(personas.alice.id, personas.endpoint_a.id)
    assert stale.revoked_at is None
    before = _rows()

    with pytest.raises(credentials.EndpointRevoked) as refused:
        mint_key(stale)

    assert refused.value.endpoint == stale
    assert str(refused.value) == "agent-a is revoked; a key for it would never work."
    assert _rows() == before


def test_revoke_key_revokes_one_key_once(personas: Personas) -> None:
    key = EndpointKey.objects.get(endpoint=personas.endpoint_a)
    _, other_plaintext = mint_key(personas.endpoint_a)

    assert credentials.revoke_key(key) is True
    assert credentials.revoke_key(key) is False

    assert key_for_plaintext(personas.key_a) is None
    assert key_for_plaintext(other_plaintext) is not None
    assert key_for_plaintext(personas.key_b) is not None


def test_revoke_keys_counts_only_the_keys_that_were_live(personas: Personas) -> None:
    credentials.revoke_key(EndpointKey.objects.get(endpoint=personas.endpoint_a))
    mint_key(personas.endpoint_a)

    assert credentials.revoke_keys(EndpointKey.objects.filter(endpoint=personas.endpoint_a)) == 1
    assert not EndpointKey.objects.filter(
        endpoint=personas.endpoint_a, revoked_at__isnull=True
    ).exists()


# --- every way in stores the same endpoint ------------------------------------------------------

KEY_IN_PAGE = re.compile(r"sbk_[A-Za-z0-9_-]{43}")
VERBS_GIVEN = ["complete", "claim_next", "heartbeat", "claim_next"]
VERBS_STORED = ["claim_next", "heartbeat", "complete"]


def _vend_on_the_board(personas: Personas, slug: str) -> str:
    client = Client()
    client.force_login(personas.alice)
    response = client.post(
        reverse("endpoint_new"), {"name": "Same", "slug": slug, "verbs": VERBS_GIVEN}, follow=True
    )
    assert response.status_code == 200, response.content.decode()[:2000]
    return response.content.decode()


def _add_in_the_admin(personas: Personas, slug: str) -> str:
    client = Client()
    client.force_login(personas.admin)
    response = client.post(
        reverse("admin:switchboard_endpoint_add"),
        {
            "owner": personas.alice.pk,
            "slug": slug,
            "name": "Same",
            "verbs": VERBS_GIVEN,
            "push_url": "",
            "keys-TOTAL_FORMS": "0",
            "keys-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 200, response.content.decode()[:2000]
    return response.content.decode()


def _run_the_command(personas: Personas, slug: str) -> str:
    out = io.StringIO()
    call_command(
        "create_endpoint",
        "--owner=alice",
        f"--slug={slug}",
        "--name=Same",
        f"--verbs={','.join(VERBS_GIVEN)}",
        stdout=out,
        stderr=io.StringIO(),
    )
    return out.getvalue()


def _call_the_writer(personas: Personas, slug: str) -> str:
    _, _, plaintext = credentials.create_endpoint(
        personas.alice, name="Same", slug=slug, verbs=VERBS_GIVEN
    )
    return plaintext


SURFACES = {
    "board": _vend_on_the_board,
    "admin": _add_in_the_admin,
    "command": _run_the_command,
    "writer": _call_the_writer,
}


@pytest.mark.parametrize("surface", SURFACES)
def test_every_way_in_stores_the_same_endpoint_with_one_key_shown_once(
    personas: Personas, surface: str
) -> None:
    shown = SURFACES[surface](personas, f"via-{surface}")

    endpoint = Endpoint.objects.get(slug=f"via-{surface}")
    assert (endpoint.owner, endpoint.name, endpoint.verbs, endpoint.push_url) == (
        personas.alice,
        "Same",
        VERBS_STORED,
        None,
    )
    (key,) = endpoint.keys.all()
    (plaintext,) = set(KEY_IN_PAGE.findall(shown))
    found = key_for_plaintext(plaintext)
    assert found is not None and found.pk == key.pk


def test_the_demo_endpoint_is_what_create_endpoint_stores() -> None:
    seeded = demo.seed("demo-password-for-tests")
    assert seeded is not None

    endpoint = Endpoint.objects.get(slug=demo.ENDPOINT_SLUG)
    assert endpoint.verbs == credentials.normalize_verbs(DRAIN_VERBS)
    (key,) = endpoint.keys.all()
    found = key_for_plaintext(seeded.key)
    assert found is not None and found.pk == key.pk


def test_every_way_in_refuses_the_slug_the_board_reserves(personas: Personas) -> None:
    board, staff = Client(), Client()
    board.force_login(personas.alice)
    staff.force_login(personas.admin)
    before = _rows()

    on_the_board = board.post(
        reverse("endpoint_new"), {"name": "N", "slug": "new", "verbs": VERBS_GIVEN}
    )
    in_the_admin = staff.post(
        reverse("admin:switchboard_endpoint_add"),
        {"owner": personas.alice.pk, "slug": "new", "name": "N", "verbs": VERBS_GIVEN},
    )
    with pytest.raises(CommandError, match=r"slug: .*reserved on the Board"):
        _run_the_command(personas, "new")

    for response in (on_the_board, in_the_admin):
        assert response.status_code == 200
        assert "reserved on the Board" in response.content.decode()
    assert _rows() == before
