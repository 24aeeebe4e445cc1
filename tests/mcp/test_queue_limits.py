"""claim_next over MCP on a queue at its limits: nothing claimed, and the result says which
limit and, for the rate, when a token is next available; the outputSchema declares it."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from mcp import Client

from tests.base import Personas
from tests.mcp.conftest import MODES, LiveServer, error_of, mcp_client, run
from todos import lifecycle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.parametrize("mode", MODES)]


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.structured_content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def test_claim_next_at_a_queues_limits_says_which_and_when(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    ep = personas.endpoint_a.id
    for queue in ("held", "held", "rated", "rated"):
        lifecycle.create(ep, queue=queue, title="work")
    last = lifecycle.create(ep, queue="held", title="work")
    lifecycle.set_queue_limits(ep, "held", human_id=None, max_in_flight=2)
    lifecycle.set_queue_limits(ep, "rated", human_id=None, claims_per_minute=1)
    url = live.mcp_url("agent-a")

    async def go() -> None:
        async with mcp_client(url, personas.key_a, mode) as client:
            for queue in ("held", "held", "rated"):
                got = await call(client, "claim_next", queue=queue)
                assert got["empty"] is False
            at_limit = await call(client, "claim_next", queues=["held", "rated"])
            assert at_limit["empty"] is True and "paused_queues" not in at_limit
            held, rated = at_limit["queues"]
            assert held == {
                "queue": "held",
                "reason": "max_in_flight",
                "in_flight": 2,
                "max_in_flight": 2,
            }
            assert rated["reason"] == "rate"
            retry_at = dt.datetime.fromisoformat(rated["retry_at"])
            assert 50 < (retry_at - dt.datetime.now(dt.UTC)).total_seconds() <= 61
            refused = error_of(await client.call_tool("claim", {"id": last.id}))
            assert refused["code"] == "conflict"
            tools = {t.name: t for t in (await client.list_tools()).tools}
            schema = tools["claim_next"].output_schema or {}
            assert "queues" in schema["properties"]

    run(go())
