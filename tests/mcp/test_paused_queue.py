"""claim_next over MCP on a paused queue: nothing claimed, and the result names the paused
queues it asked for; a claim by id there is a conflict; after the resume the todo is claimed."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone
from mcp import Client

from tests.base import Personas
from tests.mcp.conftest import MODES, LiveServer, error_of, mcp_client, run
from todos import budgets, lifecycle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.parametrize("mode", MODES)]


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.structured_content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def test_claim_next_on_a_paused_queue_claims_nothing_and_says_why(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    ep = personas.endpoint_a.id
    todo = lifecycle.create(ep, queue="ci", title="Fix the build")
    lifecycle.pause_queue(ep, "ci", human_id=personas.alice.id)
    url = live.mcp_url("agent-a")

    async def while_paused() -> None:
        async with mcp_client(url, personas.key_a, mode) as client:
            one = await call(client, "claim_next", queue="ci")
            assert one["empty"] is True and one["paused_queues"] == ["ci"]
            assert one["queues"] == [{"queue": "ci", "reason": "paused", "paused_by": "operator"}]
            several = await call(client, "claim_next", queues=["other", "ci"])
            assert several["empty"] is True and several["paused_queues"] == ["ci"]
            assert [q["reason"] for q in several["queues"]] == ["empty", "paused"]
            idle = await call(client, "claim_next", queue="other")
            assert idle == {"empty": True, "queues": [{"queue": "other", "reason": "empty"}]}
            refused = error_of(await client.call_tool("claim", {"id": todo.id}))
            assert refused["code"] == "conflict"

    run(while_paused())
    lifecycle.resume_queue(ep, "ci", human_id=personas.alice.id)

    async def resumed() -> None:
        async with mcp_client(url, personas.key_a, mode) as client:
            claimed = await call(client, "claim_next", queue="ci")
            assert claimed["empty"] is False and claimed["todo"]["id"] == todo.id

    run(resumed())


def test_claim_next_on_a_budget_paused_queue_names_the_budget_and_its_end(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    """A spent daily budget's pause answers paused, as an operator's, and says whose and until
    when (the next UTC midnight): the agent can wait for it rather than for a human."""
    ep = personas.endpoint_a.id
    todo = lifecycle.create(ep, queue="spent", title="Costly")
    start = budgets.day_start(timezone.now())
    lifecycle.pause_for_budget([(ep, "spent")], reason="endpoint_budget", day_start=start)
    midnight = start + dt.timedelta(days=1)

    async def while_paused() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, mode) as client:
            got = await call(client, "claim_next", queue="spent")
            assert got["empty"] is True and got["paused_queues"] == ["spent"]
            [why] = got["queues"]
            assert why["reason"] == "paused" and why["paused_by"] == "endpoint_budget"
            assert dt.datetime.fromisoformat(why["retry_at"]) == midnight
            refused = error_of(await client.call_tool("claim", {"id": todo.id}))
            assert refused["code"] == "conflict"
            assert "endpoint's daily budget is spent" in refused["message"]

    run(while_paused())
