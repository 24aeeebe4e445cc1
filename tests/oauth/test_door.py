"""The token and registration endpoints' door (switchboard/asgi.py's route table): the client
address's rate before Django runs, refused in RFC 6749's JSON shape; the consent page and the
discovery documents are Django's own."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from switchboard import runtime_settings

pytestmark = pytest.mark.django_db(transaction=True)


async def _post(app: Any, path: str, client: str) -> tuple[int, dict[str, str], bytes]:
    body = b"grant_type=authorization_code&code=nope&client_id=nobody"
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/x-www-form-urlencoded"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": (client, 40000),
        "server": ("testserver", 80),
    }
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {bytes(k).decode().lower(): bytes(v).decode() for k, v in start["headers"]}
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return int(start["status"]), headers, content


def test_the_token_and_registration_endpoints_are_rate_limited_per_address() -> None:
    from switchboard import asgi

    assert asgi.ROUTES.route("/oauth/token/").door.name == "oauth"
    assert asgi.ROUTES.route("/oauth/register/").door.name == "oauth"
    assert asgi.ROUTES.route("/oauth/authorize/").door.name == "django"
    runtime_settings.put("oauth_rate_per_address", 2)
    runtime_settings.clear_cache()

    async def scenario() -> list[tuple[int, dict[str, str], bytes]]:
        return [
            await _post(asgi.http, "/oauth/token/", "203.0.113.41"),
            await _post(asgi.http, "/oauth/register/", "203.0.113.41"),
            await _post(asgi.http, "/oauth/token/", "203.0.113.41"),
            await _post(asgi.http, "/oauth/token/", "203.0.113.42"),
        ]

    first, second, third, elsewhere = asyncio.run(scenario())
    assert first[0] == 401 and json.loads(first[2])["error"] == "invalid_client"
    assert second[0] == 400 and json.loads(second[2])["error"].startswith("invalid_")
    assert third[0] == 429
    assert third[1]["content-type"] == "application/json" and "retry-after" in third[1]
    assert json.loads(third[2])["error"] == "temporarily_unavailable"
    assert elsewhere[0] == 401  # another address has its own budget
