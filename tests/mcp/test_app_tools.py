"""The MCP App's server side without a browser (tests/e2e/test_mcp_app.py renders it): its
resource is listed only to clients that declared the extension, and its ``retry_todo`` tool is
the Board's retry in the endpoint's scope."""

from __future__ import annotations

import json
from typing import Any

import pytest

from activity.models import TodoActivity
from switchboard.credentials import mint_key
from switchboard.models import DRAIN_VERBS, Verb
from tests import reach
from tests.base import Personas
from tests.factories import EndpointFactory
from tests.mcp.conftest import LiveServer
from tests.mcp.wire import APP_URI, APPS_CLIENT, MIME, Legacy, rpc
from todos import lifecycle, states
from todos.models import Todo

pytestmark = [pytest.mark.django_db(transaction=True)]


def tool(url: str, key: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tools/call from the App (the host proxies it with the App's client declaring the
    extension): the CallToolResult."""
    return rpc(
        url, key, "tools/call", {"name": name, "arguments": arguments}, capabilities=APPS_CLIENT
    )


def tool_error(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"] is True, result
    [block] = result["content"]
    return dict(json.loads(block["text"])["error"])


def test_the_app_resource_is_listed_only_to_clients_that_declared_the_extension(
    live: LiveServer, personas: Personas
) -> None:
    """MCP Apps lets a server leave UI-only resources out of resources/list; Switchboard offers
    the App (its tools' _meta and its resource) only to clients of the extension."""
    endpoint = EndpointFactory(owner=personas.alice, slug="lister", verbs=[Verb.SUBMIT])
    _, key = mint_key(endpoint)
    url = live.mcp_url("lister")

    def listed(capabilities: dict[str, Any] | None) -> list[str]:
        listing = rpc(url, key, "resources/list", {}, capabilities=capabilities)
        return [r["uri"] for r in listing["resources"]]

    assert APP_URI in listed(APPS_CLIENT)
    assert APP_URI not in listed(None)
    # A 2025-11-25 session: later requests do not say what initialize declared.
    legacy = Legacy(url, key).result("resources/list", {})
    assert APP_URI not in [r["uri"] for r in legacy["resources"]]
    # The resource itself stays readable: a host that saw it in a tool's _meta reads it.
    read = rpc(url, key, "resources/read", {"uri": APP_URI})
    assert read["contents"][0]["mimeType"] == MIME


def test_retry_todo_sends_a_dead_lettered_todo_back_as_the_endpoints_requester(
    live: LiveServer, personas: Personas
) -> None:
    endpoint = EndpointFactory(
        owner=personas.alice, slug="retrier", verbs=[*DRAIN_VERBS, Verb.SUBMIT]
    )
    _, key = mint_key(endpoint)
    url = live.mcp_url("retrier")
    held = reach.claimed(endpoint.id, "q", max_attempts=1)
    todo_id = held.todo.id
    lifecycle.fail(endpoint.id, todo_id, owner=reach.OWNER, summary="broke", retryable=False)
    assert states.is_dead_letter(Todo.objects.get(id=todo_id))

    retried = tool(url, key, "retry_todo", {"id": todo_id})
    assert retried["isError"] is False, retried
    assert retried["structuredContent"]["state"] == "pending"
    todo = Todo.objects.get(id=todo_id)
    assert todo.state == "pending" and todo.finished_at is None
    # One row: the endpoint's requester retried it (switchboard/lib/actors.py's spelling).
    [row] = TodoActivity.objects.filter(todo_id=todo_id, kind="a2a_state")
    assert row.actor_ref == f"requester:{endpoint.id}"
    assert row.detail == {"from": "failed", "to": "pending", "action": "retry"}

    # Only a finished todo goes back: a pending one is a conflict, and nothing changes.
    again = tool_error(tool(url, key, "retry_todo", {"id": todo_id}))
    assert again["code"] == "conflict", again
    # A rejected or canceled todo is retried too.
    refused = reach.claimed(endpoint.id, "q")
    lifecycle.reject(endpoint.id, refused.todo.id, owner=reach.OWNER, summary="no")
    assert tool(url, key, "retry_todo", {"id": refused.todo.id})["isError"] is False

    # Another endpoint's todo reads as unknown; an endpoint without submit may not retry.
    bobs = reach.claimed(personas.endpoint_b.id, "q", max_attempts=1)
    lifecycle.fail(personas.endpoint_b.id, bobs.todo.id, owner=reach.OWNER, retryable=False)
    assert tool_error(tool(url, key, "retry_todo", {"id": bobs.todo.id}))["code"] == "not_found"
    assert states.is_dead_letter(Todo.objects.get(id=bobs.todo.id))
    drain_only = live.mcp_url(personas.endpoint_b.slug)
    forbidden = tool_error(tool(drain_only, personas.key_b, "retry_todo", {"id": bobs.todo.id}))
    assert forbidden["code"] == "forbidden"
    assert states.is_dead_letter(Todo.objects.get(id=bobs.todo.id))
