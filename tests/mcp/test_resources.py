"""Resources over MCP: a todo's detail and a queue's summary, owner-scoped, in both eras."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from switchboard.credentials import mint_key
from switchboard.models import Verb
from tests.base import Personas
from tests.factories import EndpointFactory, RuleFactory, SourceFactory
from tests.mcp.conftest import MODES, LiveServer, mcp_client, run
from todos import lifecycle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.parametrize("mode", MODES)]


async def read_json(client: Client, uri: str) -> Any:
    result = await client.read_resource(uri)
    [content] = result.contents
    assert content.uri == uri
    assert content.mime_type == "application/json"
    assert hasattr(content, "text")
    return json.loads(content.text)


async def read_error(client: Client, uri: str) -> MCPError:
    with pytest.raises(MCPError) as caught:
        await client.read_resource(uri)
    return caught.value


def test_templates_follow_the_endpoints_verbs(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    drain_only = EndpointFactory(
        owner=personas.alice, slug="drain-only", verbs=[Verb.CLAIM_NEXT, Verb.COMPLETE]
    )
    reporter = EndpointFactory(owner=personas.alice, slug="reporter", verbs=[Verb.COMPLETE])
    _, drain_key = mint_key(drain_only)
    _, reporter_key = mint_key(reporter)

    async def templates(slug: str, key: str) -> list[str]:
        async with mcp_client(live.mcp_url(slug), key, mode) as client:
            listed = await client.list_resource_templates()
            return [t.uri_template for t in listed.resource_templates]

    assert run(templates("agent-a", personas.key_a)) == [
        "switchboard://todos/{id}",
        "switchboard://queues/{queue}",
    ]
    assert run(templates("drain-only", drain_key)) == ["switchboard://queues/{queue}"]
    assert run(templates("reporter", reporter_key)) == []


def test_a_todo_resource_is_its_detail_with_attempts(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="q", payload={"k": "v"})
    lifecycle.claim(personas.endpoint_a.id, todo.id, owner="endpoint:agent-a")
    lifecycle.complete(personas.endpoint_a.id, todo.id, owner="endpoint:agent-a", result=[1])
    bobs = lifecycle.create(personas.endpoint_b.id, queue="q")

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, mode) as client:
            detail = await read_json(client, f"switchboard://todos/{todo.id}")
            assert detail["todo"]["id"] == todo.id
            assert detail["todo"]["payload"] == {"k": "v"}
            assert detail["todo"]["result"] == [1]
            assert [a["outcome"] for a in detail["attempts"]] == ["completed"]
            # Foreign, unknown and malformed URIs all read "not found".
            for uri in (
                f"switchboard://todos/{bobs.id}",
                "switchboard://todos/td_aaaaaaaaaaaaaaaaaaaa",
                "switchboard://nope/x",
                "https://example.test/",
            ):
                error = await read_error(client, uri)
                assert error.code == -32602
                assert error.message == "Resource not found"

    run(scenario())


def test_a_queue_resource_summarises_the_queue(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    source = SourceFactory(owner=personas.alice)
    RuleFactory(source=source, endpoint=personas.endpoint_a, queue="routed")
    ids = [lifecycle.create(personas.endpoint_a.id, queue="ci jobs").id for _ in range(3)]
    lifecycle.claim(personas.endpoint_a.id, ids[0], owner="endpoint:agent-a")
    lifecycle.create(personas.endpoint_b.id, queue="ci jobs")  # Bob's: never counted

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, mode) as client:
            summary = await read_json(client, "switchboard://queues/ci%20jobs")
            assert summary["queue"] == "ci jobs"
            assert summary["claimable"] == 2
            assert summary["counts"]["pending"] == 2
            assert summary["counts"]["claimed"] == 1
            assert summary["oldest_pending_at"] is not None
            empty = await read_json(client, "switchboard://queues/nothing-here")
            assert empty["claimable"] == 0 and sum(empty["counts"].values()) == 0
            listed = await client.list_resources()
            assert [r.uri for r in listed.resources] == [
                "switchboard://queues/ci%20jobs",
                "switchboard://queues/routed",
            ]

    run(scenario())


def test_resources_outside_the_verbs_are_not_readable(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    reporter = EndpointFactory(owner=personas.alice, slug="reporter", verbs=[Verb.COMPLETE])
    _, key = mint_key(reporter)
    todo = lifecycle.create(reporter.id, queue="q")

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("reporter"), key, mode) as client:
            for uri in (f"switchboard://todos/{todo.id}", "switchboard://queues/q"):
                assert (await read_error(client, uri)).code == -32602
            assert (await client.list_resources()).resources == []

    run(scenario())
