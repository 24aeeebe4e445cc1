"""The issue's check, end to end on a real server: a signed GitHub-style delivery sent over HTTP
to daphne (as ``make run`` serves it) lands as a todo that the official MCP client claims; the
server answers an oversized body with JSON 413, declared or chunked (test_guard.py shows the
guard refuses it before reading it to the end)."""

from __future__ import annotations

import json

import httpx2
import pytest

from tests.base import Personas
from tests.factories import RuleFactory, SourceFactory
from tests.intake.conftest import CHECK_RUN_FAILED, SECRET
from tests.live import LiveServer, mcp_client, run
from todos.intake.routing import sign
from todos.models import Event

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_signed_delivery_becomes_a_todo_an_mcp_client_claims(
    live_daphne: LiveServer, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice, slug="github", secret=SECRET)
    RuleFactory(
        source=source,
        endpoint=personas.endpoint_a,
        queue="ci-fix",
        match={"headers": {"X-GitHub-Event": "check_run"}, "payload": {"action": "completed"}},
        title_template="Fix {{ check_run.name }}",
    )
    body = json.dumps(CHECK_RUN_FAILED).encode()

    response = httpx2.post(
        live_daphne.url("/hooks/github"),
        content=body,
        headers={
            "Content-Type": "application/json",
            "X-GitHub-Event": "check_run",
            "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
            "X-Hub-Signature-256": sign(SECRET, body),
        },
    )

    assert response.status_code == 202, response.text
    (todo_id,) = response.json()["todo_ids"]

    async def claim() -> dict:
        async with mcp_client(
            live_daphne.mcp_url("agent-a"), personas.key_a, "2026-07-28"
        ) as client:
            result = await client.call_tool("claim_next", {"queue": "ci-fix"})
            assert not result.is_error, result.structured_content
            assert isinstance(result.structured_content, dict)
            return result.structured_content

    claimed = run(claim())
    assert claimed["todo"]["id"] == todo_id
    assert claimed["todo"]["title"] == "Fix test (3.12)"
    assert claimed["todo"]["payload"] == CHECK_RUN_FAILED


@pytest.mark.parametrize("chunked", [False, True])
def test_an_oversized_delivery_over_http_is_a_json_413(
    live_daphne: LiveServer, personas: Personas, chunked: bool
) -> None:
    SourceFactory(owner=personas.alice, slug="github", secret=SECRET)
    limit = 5 * 1_048_576  # the default SWITCHBOARD_HOOK_MAX_BODY_BYTES
    body = b"x" * (limit + 1)
    content = (part for part in (body[:limit], body[limit:])) if chunked else body

    response = httpx2.post(
        live_daphne.url("/hooks/github"),
        content=content,
        headers={"Content-Type": "application/json"},
    )

    assert response.status_code == 413
    assert response.json()["error"] == "too_large"
    assert not Event.objects.exists()


def test_bad_input_over_http_is_json_never_html(live_daphne: LiveServer, personas: Personas):
    SourceFactory(owner=personas.alice, slug="github", secret=SECRET)
    cases = [
        ("POST", "/hooks/nope", b"{}", 404),
        ("POST", "/hooks/github", b"{}", 401),
        ("GET", "/hooks/github", b"", 405),
    ]
    for method, path, content, status in cases:
        response = httpx2.request(method, live_daphne.url(path), content=content)
        assert response.status_code == status, (path, response.text)
        assert response.headers["content-type"] == "application/json"
