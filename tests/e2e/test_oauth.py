"""A chat app's sign-in in a real browser: the consent page's Allow and Deny reach the client.

Chromium holds the redirect that follows a form's submission to the submitting page's
``form-action``; the Board's ``'self'`` alone kept the browser on the consent page, which the
tests over Django's client (tests/oauth/) cannot see.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from playwright.sync_api import Route, expect

from switchboard import demo as demo_data
from switchboard.lib import oauth_scopes
from tests.e2e.conftest import Board, Demo
from tests.oauth.flow import REDIRECT, pkce

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


def _arrivals(board: Board) -> list[str]:
    """The URLs the browser is sent to at the client's redirect URI (answered with a page)."""
    arrived: list[str] = []

    def answer(route: Route) -> None:
        arrived.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<p>signed in</p>")

    board.page.route(re.compile(re.escape(REDIRECT) + ".*"), answer)
    return arrived


def _authorize_url(board: Board) -> tuple[str, str]:
    registered = httpx2.post(
        board.live.url("/oauth/register/"),
        json={
            "client_name": "Chat in a browser",
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
        timeout=30,
    )
    assert registered.status_code == 201, registered.text
    _, challenge = pkce()
    query = {
        "response_type": "code",
        "client_id": registered.json()["client_id"],
        "redirect_uri": REDIRECT,
        "state": "st-1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "scope": " ".join(oauth_scopes.ALL),
        "resource": board.live.url(f"/mcp/{demo_data.ENDPOINT_SLUG}/oauth"),
    }
    return board.live.url("/oauth/authorize/?" + urlencode(query)), query["state"]


@pytest.mark.parametrize("button", ["Allow", "Deny"])
def test_the_consent_sends_the_browser_to_the_client(board: Board, demo: Demo, button: str) -> None:
    arrived = _arrivals(board)
    url, state = _authorize_url(board)
    board.login("demo")

    board.page.goto(url)
    board.page.get_by_role("button", name=button).click()

    expect(board.page.get_by_text("signed in")).to_be_visible()
    [landed] = arrived
    answer = parse_qs(urlsplit(landed).query)
    assert answer["state"] == [state] and answer["iss"] == [board.live.base]
    if button == "Allow":
        assert answer["code"]
    else:
        assert answer["error"] == ["access_denied"]
