"""The endpoint bearer resolver (switchboard/auth.py): one answer for every way of failing."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test import RequestFactory
from django.utils import timezone

from switchboard import auth
from switchboard.auth import BearerRejected, bearer_token, resolve_endpoint_bearer
from switchboard.credentials import mint_key
from switchboard.lib import dbthread
from switchboard.models import Endpoint, EndpointKey
from tests.base import Personas
from todos import lifecycle

pytestmark = pytest.mark.django_db


def _scope(*headers: tuple[bytes, bytes]) -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": "/mcp/agent-a", "headers": list(headers)}


def _request(authorization: str | None) -> Any:
    extra = {} if authorization is None else {"HTTP_AUTHORIZATION": authorization}
    return RequestFactory().post("/mcp/agent-a", **extra)


def _rejection(request_or_scope: Any, slug: str) -> BearerRejected:
    with pytest.raises(BearerRejected) as caught:
        resolve_endpoint_bearer(request_or_scope, slug)
    return caught.value


def test_a_django_request_with_the_endpoints_key_resolves_to_the_endpoint(
    personas: Personas,
) -> None:
    endpoint = resolve_endpoint_bearer(_request(f"Bearer {personas.key_a}"), "agent-a")
    assert endpoint.pk == personas.endpoint_a.pk


def test_an_asgi_scope_with_the_endpoints_key_resolves_to_the_endpoint(
    personas: Personas,
) -> None:
    scope = _scope((b"authorization", f"Bearer {personas.key_a}".encode()))
    assert resolve_endpoint_bearer(scope, "agent-a").pk == personas.endpoint_a.pk


def test_the_scheme_is_case_insensitive(personas: Personas) -> None:
    scope = _scope((b"authorization", f"bearer {personas.key_b}".encode()))
    assert resolve_endpoint_bearer(scope, "agent-b").pk == personas.endpoint_b.pk


@pytest.mark.parametrize(
    ("header", "presented"),
    [
        (None, False),
        ("", False),
        ("Bearer", False),
        ("Bearer ", False),
        ("Basic YWxpY2U6cGFzcw==", False),
        ("Bearer sbk_a sbk_b", False),
        ("Token sbk_x", False),
        ("Bearer sbk_unknown", True),
        ("Bearer not-a-key-at-all", True),
    ],
)
def test_missing_malformed_and_unknown_credentials_are_all_rejected_alike(
    personas: Personas, header: str | None, presented: bool
) -> None:
    """One rejection for every way of failing; its challenge names ``invalid_token`` only when
    a bearer token was presented (RFC 6750 §3.1: none for a request without credentials)."""
    rejected = _rejection(_request(header), "agent-a")
    assert rejected.status == 401
    assert str(rejected) == str(_rejection(_request("Bearer sbk_unknown"), "agent-a"))
    assert rejected.presented is presented
    challenge = rejected.headers["WWW-Authenticate"]
    assert challenge.startswith('Bearer realm="switchboard"')
    assert ('error="invalid_token"' in challenge) is presented
    assert rejected.refusal().headers == rejected.headers


def test_a_key_presented_on_another_endpoints_slug_is_rejected(personas: Personas) -> None:
    # Bob's key is live; it just is not Alice's endpoint's key.
    assert str(_rejection(_request(f"Bearer {personas.key_b}"), "agent-a")) == str(
        _rejection(_request("Bearer sbk_unknown"), "agent-a")
    )


def test_a_revoked_key_is_rejected(personas: Personas) -> None:
    EndpointKey.objects.filter(endpoint=personas.endpoint_a).update(revoked_at=timezone.now())
    _rejection(_request(f"Bearer {personas.key_a}"), "agent-a")


def test_a_revoked_endpoint_is_rejected_even_with_a_live_key(personas: Personas) -> None:
    lifecycle.revoke_endpoint(personas.alice.pk, personas.endpoint_a.pk)
    _rejection(_request(f"Bearer {personas.key_a}"), "agent-a")


def test_a_second_live_key_of_the_same_endpoint_also_resolves(personas: Personas) -> None:
    _, second = mint_key(personas.endpoint_a)
    assert resolve_endpoint_bearer(_request(f"Bearer {second}"), "agent-a").pk == (
        personas.endpoint_a.pk
    )


def test_two_authorization_headers_are_refused_as_ambiguous(personas: Personas) -> None:
    scope = _scope(
        (b"authorization", f"Bearer {personas.key_a}".encode()),
        (b"authorization", f"Bearer {personas.key_a}".encode()),
    )
    _rejection(scope, "agent-a")


def test_a_non_ascii_header_is_refused(personas: Personas) -> None:
    _rejection(_scope((b"authorization", "Bearer sbk_é".encode())), "agent-a")


def test_bearer_token_extracts_the_token_only() -> None:
    assert bearer_token(_scope((b"authorization", b"Bearer  sbk_abc "))) == "sbk_abc"
    assert bearer_token(_scope()) is None


def _last_used(personas: Personas) -> dt.datetime | None:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT last_used_at FROM endpoint_keys WHERE endpoint_id = %s",
            [personas.endpoint_a.pk],
        )
        row = cur.fetchone()
    assert row is not None
    return row[0]


def test_use_is_recorded_at_most_once_a_minute(
    personas: Personas, django_assert_num_queries: Any
) -> None:
    request = _request(f"Bearer {personas.key_a}")
    resolve_endpoint_bearer(request, "agent-a")
    first = _last_used(personas)
    assert first is not None
    # Within the minute: the lookup only, no write.
    with django_assert_num_queries(1):
        resolve_endpoint_bearer(request, "agent-a")
    assert _last_used(personas) == first
    # A minute later (moved in the database, where now() lives): written again.
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE endpoint_keys SET last_used_at = now() - interval '2 minutes'"
            " WHERE endpoint_id = %s",
            [personas.endpoint_a.pk],
        )
    assert _last_used(personas) == first - dt.timedelta(minutes=2)
    resolve_endpoint_bearer(request, "agent-a")
    # The test's transaction pins now(), so the fresh write reads back as the first one did.
    assert _last_used(personas) == first


# --- the async resolver's key cache ------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    clock = Clock()
    monkeypatch.setattr(auth, "_clock", clock)
    auth.forget_keys()
    yield clock
    auth.forget_keys()


def _aresolve(key: str, slug: str) -> Endpoint:
    """``aresolve_endpoint_bearer`` on a loop of its own (the tests' ``one_hop_thread`` closes
    the worker's connection after them)."""
    scope = _scope((b"authorization", f"Bearer {key}".encode()))
    return asyncio.run(auth.aresolve_endpoint_bearer(scope, slug))


@pytest.mark.django_db(transaction=True)  # the lookup runs on a worker thread's connection
def test_the_async_resolver_trusts_a_resolved_key_for_key_cache_seconds_only(
    personas: Personas, clock: Clock, one_hop_thread: dbthread.Pool
) -> None:
    assert _aresolve(personas.key_a, "agent-a").pk == personas.endpoint_a.pk
    EndpointKey.objects.filter(endpoint=personas.endpoint_a).update(revoked_at=timezone.now())
    # Inside the window the revocation is not seen yet: the answer came from memory.
    clock.now += auth.KEY_CACHE_SECONDS - 0.001
    assert _aresolve(personas.key_a, "agent-a").pk == personas.endpoint_a.pk
    # A key on another endpoint's URL is refused from memory too.
    with pytest.raises(BearerRejected):
        _aresolve(personas.key_a, "agent-b")
    # Once the window has passed, the database is asked again.
    clock.now += 0.001
    with pytest.raises(BearerRejected):
        _aresolve(personas.key_a, "agent-a")
    with pytest.raises(BearerRejected):  # and a refusal is not kept as a pass
        _aresolve(personas.key_a, "agent-a")


@pytest.mark.django_db(transaction=True)
def test_the_async_resolver_keeps_no_refusal(
    personas: Personas, clock: Clock, one_hop_thread: dbthread.Pool
) -> None:
    """An unknown key is asked about every time: a key minted a moment later works at once."""
    endpoint = personas.endpoint_a
    EndpointKey.objects.filter(endpoint=endpoint).update(revoked_at=timezone.now())
    with pytest.raises(BearerRejected):
        _aresolve(personas.key_a, "agent-a")
    EndpointKey.objects.filter(endpoint=endpoint).update(revoked_at=None)
    assert _aresolve(personas.key_a, "agent-a").pk == endpoint.pk


@pytest.mark.django_db(transaction=True)
def test_the_key_cache_stays_bounded(
    personas: Personas, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(auth, "KEY_CACHE_SIZE", 2)
    _, second = mint_key(personas.endpoint_a)
    _aresolve(personas.key_a, "agent-a")
    _aresolve(personas.key_b, "agent-b")
    clock.now += auth.KEY_CACHE_SECONDS  # both expired: the next entry replaces them
    _aresolve(second, "agent-a")
    assert len(auth._resolved) == 1
    _aresolve(personas.key_a, "agent-a")
    _aresolve(personas.key_b, "agent-b")  # full of live entries: start over
    assert len(auth._resolved) == 1
