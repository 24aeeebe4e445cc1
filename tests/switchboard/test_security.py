"""Login throttling, the guarded /metrics, forwarded addresses from trusted proxies only, and the
security headers (CSP, HSTS, secure cookies)."""

from __future__ import annotations

import asyncio
import importlib
from types import SimpleNamespace
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.test.utils import override_settings

from switchboard.lib.proxies import (
    FORWARDED_UNTRUSTED_KEY,
    ForwardedMiddleware,
    forwarded_client,
    parse_networks,
)
from tests.base import Personas

PASSWORD = "correct horse battery staple"


# --- login throttling ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_the_right_password_is_refused_after_too_many_wrong_ones(
    personas: Personas, path: str
) -> None:
    client = Client()
    assert personas.admin.check_password(PASSWORD)  # the right one, as the factory sets it
    for _ in range(settings.AXES_FAILURE_LIMIT):
        wrong = client.post(path, {"username": "admin", "password": "not it"})
        assert wrong.status_code in (200, 429)  # the form again, then the lockout page

    response = client.post(path, {"username": "admin", "password": PASSWORD})

    assert response.status_code == 429
    assert response["Retry-After"] == str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    assert "Too many failed logins" in response.content.decode()
    assert "_auth_user_id" not in client.session
    # Another address may still log in as admin: the lock is per username and address.
    elsewhere = Client(REMOTE_ADDR="10.9.9.9")
    assert elsewhere.post(path, {"username": "admin", "password": PASSWORD}).status_code == 302


@override_settings(SWITCHBOARD_LOGIN_USERNAME_FAILURE_LIMIT=12)
def test_guessing_spread_over_many_addresses_spends_the_username_s_budget(
    personas: Personas,
) -> None:
    """Under the pair's limit at every address, over the username's budget in all."""
    for n in range(12):
        client = Client(REMOTE_ADDR=f"10.0.{n}.1")
        for _ in range(settings.AXES_FAILURE_LIMIT - 4):
            assert client.post("/login/", {"username": "alice", "password": "no"}).status_code in (
                200,
                429,
            )

    fresh = Client(REMOTE_ADDR="10.99.0.1")
    response = fresh.post("/login/", {"username": "alice", "password": PASSWORD})

    assert response.status_code == 429 and response["Retry-After"]
    assert "from all addresses" in response.content.decode()
    assert "_auth_user_id" not in fresh.session
    # Another username is untouched.
    assert fresh.post("/login/", {"username": "bob", "password": PASSWORD}).status_code == 302


def test_a_few_wrong_passwords_then_the_right_one_logs_in(personas: Personas) -> None:
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert client.post("/login/", {"username": "alice", "password": "no"}).status_code == 200

    response = client.post("/login/", {"username": "alice", "password": PASSWORD})

    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(personas.alice.pk)


def test_lockouts_are_listed_in_the_admin(personas: Personas) -> None:
    for _ in range(settings.AXES_FAILURE_LIMIT):
        Client().post("/login/", {"username": "bob", "password": "no"})
    staff = Client()
    staff.force_login(personas.admin)

    page = staff.get("/admin/axes/accessattempt/")

    assert page.status_code == 200
    assert "bob" in page.content.decode()


# --- /metrics -----------------------------------------------------------------------------------


@pytest.mark.django_db
@override_settings(SWITCHBOARD_METRICS_TOKEN="scrape-me")
def test_metrics_answer_loopback_or_the_bearer_and_404_anyone_else() -> None:
    assert Client().get("/metrics").status_code == 200  # the test client is 127.0.0.1
    outside = Client(REMOTE_ADDR="203.0.113.7")
    assert outside.get("/metrics").status_code == 404
    assert outside.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 404
    scraped = outside.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-me")
    assert scraped.status_code == 200
    assert b"django_http_requests" in scraped.content


@pytest.mark.django_db
@override_settings(SWITCHBOARD_METRICS_TOKEN="")
def test_metrics_take_no_empty_bearer() -> None:
    outside = Client(REMOTE_ADDR="203.0.113.7")
    assert outside.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 404


@pytest.mark.django_db
@override_settings(SWITCHBOARD_METRICS_ALLOW=parse_networks(["10.0.0.0/8"], setting="t"))
def test_metrics_follow_the_configured_allow_list() -> None:
    assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 200
    assert Client().get("/metrics").status_code == 404  # loopback is no longer listed


# --- forwarded headers --------------------------------------------------------------------------


def _through(trusted: list[str], client: str, headers: dict[str, str]) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.update(scope)

    middleware = ForwardedMiddleware(app, parse_networks(trusted, setting="t"))
    scope = {
        "type": "http",
        "scheme": "http",
        "client": (client, 5000),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    asyncio.run(middleware(scope, None, None))
    return seen


FORWARDED = {"X-Forwarded-For": "198.51.100.1, 203.0.113.9", "X-Forwarded-Proto": "https"}


def test_a_trusted_proxy_sets_the_client_address_and_scheme() -> None:
    scope = _through(["10.0.0.0/8"], "10.0.0.5", FORWARDED)

    # The rightmost hop not a trusted proxy: the left one was written by the client itself.
    assert scope["client"] == ("203.0.113.9", 0)
    assert scope["scheme"] == "https"


def test_an_untrusted_peer_keeps_its_address_and_loses_its_forwarding_headers() -> None:
    scope = _through(["10.0.0.0/8"], "192.0.2.50", FORWARDED)

    assert scope["client"] == ("192.0.2.50", 5000)
    assert scope["scheme"] == "http"
    assert scope["headers"] == []
    assert scope[FORWARDED_UNTRUSTED_KEY] is True


def test_with_no_trusted_proxies_nobody_is_believed() -> None:
    scope = _through([], "127.0.0.1", FORWARDED)

    assert scope["client"] == ("127.0.0.1", 5000)
    assert scope["scheme"] == "http"


def test_the_client_is_the_first_untrusted_hop_from_the_right() -> None:
    trusted = parse_networks(["10.0.0.0/8"], setting="t")
    assert forwarded_client("10.0.0.1", "1.1.1.1, 2.2.2.2, 10.0.0.9", trusted) == "2.2.2.2"
    assert forwarded_client("10.0.0.1", "10.0.0.8, 10.0.0.9", trusted) == "10.0.0.8"
    assert forwarded_client("10.0.0.1", None, trusted) is None


def test_a_bad_proxy_address_stops_start_up() -> None:
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="SWITCHBOARD_TRUSTED_PROXIES"):
        parse_networks(["10.0.0.0/8", "proxy.internal"], setting="SWITCHBOARD_TRUSTED_PROXIES")


# --- headers ------------------------------------------------------------------------------------


@pytest.mark.django_db
@override_settings(SECURE_HSTS_SECONDS=600, SECURE_SSL_REDIRECT=False)
def test_hsts_is_sent_on_https_requests_only() -> None:
    assert Client().get("/healthz", secure=True)["Strict-Transport-Security"] == "max-age=600"
    assert "Strict-Transport-Security" not in Client().get("/healthz")


@pytest.mark.django_db
def test_pages_carry_a_content_security_policy() -> None:
    policy = Client().get("/login/")["Content-Security-Policy"]

    assert "default-src 'self'" in policy
    assert "script-src 'self'" in policy
    assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    assert "style-src 'self' 'unsafe-inline'" in policy
    assert "frame-ancestors 'none'" in policy


def _settings_with(monkeypatch: pytest.MonkeyPatch, **env: str) -> Any:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    import switchboard.settings as module

    try:
        # A copy: the reload below puts the module back as the test run configured it.
        return SimpleNamespace(**vars(importlib.reload(module)))
    finally:
        for name in env:
            monkeypatch.delenv(name)
        importlib.reload(module)


def test_https_turns_on_secure_cookies_and_hsts_without_subdomains(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    on = _settings_with(monkeypatch, SWITCHBOARD_HTTPS="true")
    assert on.SESSION_COOKIE_SECURE and on.CSRF_COOKIE_SECURE
    assert on.SECURE_HSTS_SECONDS == 31_536_000
    assert on.SECURE_HSTS_INCLUDE_SUBDOMAINS is False
    off = _settings_with(monkeypatch, SWITCHBOARD_HTTPS="false")
    assert not off.SESSION_COOKIE_SECURE and not off.CSRF_COOKIE_SECURE
    assert off.SECURE_HSTS_SECONDS == 0


def test_trusted_proxies_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _settings_with(monkeypatch, SWITCHBOARD_TRUSTED_PROXIES="10.0.0.1, 172.16.0.0/12")

    assert [str(n) for n in module.SWITCHBOARD_TRUSTED_PROXIES] == ["10.0.0.1/32", "172.16.0.0/12"]
