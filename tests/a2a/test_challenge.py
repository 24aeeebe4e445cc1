"""The 401 of /a2a/{slug} over HTTP, the endpoint's calls and its agent card alike: it names the
resource's protected-resource metadata by absolute URL (RFC 9728 §5.1), so a client that speaks
only OAuth discovers the rest from it, and that document is served; ``error="invalid_token"``
only when a bearer was presented, and then the same for every way it failed, key or token
(RFC 6750 §3.1). The body keeps the surface's JSON-RPC shape."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from switchboard.credentials import mint_key
from switchboard.models import A2A_VERBS, DRAIN_VERBS
from tests.base import Personas
from tests.factories import EndpointFactory
from tests.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True)]

SLUG = "front"
PATHS = ("", "/.well-known/agent-card.json")


def _call(live: LiveServer, path: str, authorization: str | None) -> httpx2.Response:
    headers = {"A2A-Version": "1.0"}
    if authorization is not None:
        headers["Authorization"] = authorization
    url = live.url(f"/a2a/{SLUG}{path}")
    if path:  # the card
        return httpx2.get(url, headers=headers, timeout=30)
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
    return httpx2.post(url, headers=headers, json=body, timeout=30)


def _metadata_url(live: LiveServer) -> str:
    return live.url(f"/.well-known/oauth-protected-resource/a2a/{SLUG}")


def _assert_jsonrpc_401(response: httpx2.Response) -> dict[str, Any]:
    assert response.status_code == 401, response.text
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert body["error"]["code"] == -32600
    return body


@pytest.fixture
def front(personas: Personas) -> str:
    """An A2A endpoint of alice's; its key."""
    endpoint = EndpointFactory(owner=personas.alice, slug=SLUG, verbs=[*DRAIN_VERBS, *A2A_VERBS])
    return mint_key(endpoint)[1]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("authorization", [None, "Basic YWxpY2U6eA==", "Bearer", "Bearer a b"])
def test_without_a_bearer_the_401_names_the_metadata_and_no_error(
    live: LiveServer, front: str, path: str, authorization: str | None
) -> None:
    response = _call(live, path, authorization)
    _assert_jsonrpc_401(response)
    assert response.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{_metadata_url(live)}", scope="todos:submit"'
    )
    # What it names is there: this resource's metadata, pointing at this server.
    metadata = httpx2.get(_metadata_url(live), timeout=30)
    assert metadata.status_code == 200, metadata.text
    document = metadata.json()
    assert document["resource"] == live.url(f"/a2a/{SLUG}")
    assert document["authorization_servers"] == [live.base]


@pytest.mark.parametrize("path", PATHS)
def test_every_presented_bearer_refused_gets_one_401_with_invalid_token(
    live: LiveServer, personas: Personas, front: str, path: str
) -> None:
    presented = {
        "unknown key": "Bearer sbk_nope",
        "another endpoint's key": f"Bearer {personas.key_b}",
        "a key of another endpoint of the same owner": f"Bearer {personas.key_a}",
        "unknown token": "Bearer not-a-key-at-all",
    }
    answers = {label: _call(live, path, value) for label, value in presented.items()}
    expected = (
        f'Bearer error="invalid_token", resource_metadata="{_metadata_url(live)}", '
        'scope="todos:submit"'
    )
    bodies = set()
    for label, response in answers.items():
        bodies.add(response.content)
        _assert_jsonrpc_401(response)
        assert response.headers["www-authenticate"] == expected, label
    assert len(bodies) == 1, bodies
    # The endpoint's own key still passes.
    assert _call(live, path, f"Bearer {front}").status_code == 200
