"""The OAuth tests' helpers: PKCE, a client registered by DCR, the consent step over HTTP (the
Board's real form: its CSRF token and hidden fields), and a token from the token endpoint,
all through Django's test client (the live tests drive the same pages with the MCP SDK)."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import dataclass
from html import unescape
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from django.test import Client

from switchboard.lib import oauth_scopes

REDIRECT = "http://127.0.0.1:33418/callback"
ORIGIN = "http://testserver"


def pkce() -> tuple[str, str]:
    """(verifier, S256 challenge)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def register(client: Client, **metadata: Any) -> dict[str, Any]:
    body = {
        "client_name": "Test Chat",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    response = client.post("/oauth/register/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    data: dict[str, Any] = response.json()
    return data


def form_fields(html: str) -> dict[str, str]:
    """The consent form's inputs (hidden fields and the CSRF token) by name."""
    fields: dict[str, str] = {}
    for tag in re.findall(r"<input[^>]*>", html):
        name = re.search(r'name="([^"]*)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        kind = re.search(r'type="([^"]*)"', tag)
        if name and (kind is None or kind.group(1) in ("hidden",)):
            fields[unescape(name.group(1))] = unescape(value.group(1)) if value else ""
    return fields


@dataclass
class Authorization:
    client_id: str
    verifier: str
    state: str
    query: dict[str, str]

    def url(self) -> str:
        return "/oauth/authorize/?" + urlencode(self.query)


def authorization(client_id: str, slug: str | None, **extra: str) -> Authorization:
    verifier, challenge = pkce()
    state = secrets.token_urlsafe(12)
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "scope": " ".join(oauth_scopes.ALL),
    }
    if slug is not None:
        query["resource"] = f"{ORIGIN}/mcp/{slug}/oauth"
    query.update(extra)
    return Authorization(client_id, verifier, state, query)


def consent(
    client: Client,
    auth: Authorization,
    endpoint: str,
    scopes: tuple[str, ...] = (oauth_scopes.READ, oauth_scopes.WORK),
    *,
    allow: bool = True,
) -> dict[str, list[str]]:
    """Open the consent page, answer it, and return the redirect's query."""
    page = client.get(auth.url())
    assert page.status_code == 200, page.content
    fields = form_fields(page.content.decode())
    data: dict[str, Any] = {**fields, "endpoint": endpoint, "scopes": list(scopes)}
    data["allow" if allow else "deny"] = "true"
    answer = client.post(auth.url(), data)
    assert answer.status_code == 302, answer.content
    location = answer["Location"]
    assert location.startswith(REDIRECT + "?"), location
    return parse_qs(urlsplit(location).query)


def token(client: Client, auth: Authorization, code: str, **extra: str) -> Any:
    return client.post(
        "/oauth/token/",
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": auth.client_id,
            "code_verifier": auth.verifier,
            **extra,
        },
    )


def sign_in(
    client: Client, slug: str, scopes: tuple[str, ...] = (oauth_scopes.READ, oauth_scopes.WORK)
) -> dict[str, Any]:
    """DCR, consent and the token exchange for ``slug``'s MCP resource: the token response."""
    registered = register(client)
    auth = authorization(registered["client_id"], slug)
    answer = consent(client, auth, slug, scopes)
    response = token(client, auth, answer["code"][0])
    assert response.status_code == 200, response.content
    data: dict[str, Any] = response.json()
    data["client_id"] = registered["client_id"]
    return data
