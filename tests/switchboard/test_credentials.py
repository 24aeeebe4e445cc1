"""Endpoint keys (SYSTEM.md §2): ``sbk_`` + 32 random bytes, shown once, stored as SHA-256 only."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from pytest_django import DjangoAssertNumQueries

from switchboard.credentials import key_for_plaintext, mint_key, touch_key
from switchboard.models import EndpointKey
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
