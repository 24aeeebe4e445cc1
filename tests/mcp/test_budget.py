"""Cost over the wire: an agent claims over MCP, its tracer's spans arrive over OTLP/HTTP
adopting the claim's traceparent, get_todo shows the usage, the spans counted (one in error) and
the holder's progress notes, and once the spans pass the todo's $0.01 cap its next heartbeat
answers budget_exceeded (the cancel's path)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from otlp import prices
from tests.base import Personas
from tests.mcp.conftest import LiveServer, error_of, mcp_client, run
from tests.otlp.helpers import SpanSpec, post_proto, request
from tests.otlp.test_usage import FIXTURES
from todos import lifecycle

pytestmark = pytest.mark.django_db(transaction=True)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.structured_content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def chat(trace: bytes, parent: bytes, output_tokens: int) -> SpanSpec:
    return SpanSpec(
        trace,
        parent=parent,
        name="chat gpt-4o",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": 100,
            "gen_ai.usage.output_tokens": output_tokens,
        },
    )


def failed_tool(trace: bytes, parent: bytes) -> SpanSpec:
    return SpanSpec(
        trace,
        parent=parent,
        name="execute_tool search",
        status=2,  # STATUS_CODE_ERROR
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"},
    )


def test_a_capped_todo_is_stopped_on_its_next_heartbeat_over_mcp(
    live: LiveServer, personas: Personas
) -> None:
    prices.load(prices.parse((FIXTURES / "prices.csv").read_text()), "tests")
    todo = lifecycle.create(personas.endpoint_a.id, queue="ci", max_cost_usd="0.01")
    url = live.mcp_url("agent-a")

    async def scenario() -> None:
        async with mcp_client(url, personas.key_a, "legacy") as client:
            claimed = await call(client, "claim_next", queue="ci")
            assert claimed["todo"]["id"] == todo.id
            _, trace_hex, parent_hex, _ = claimed["traceparent"].split("-")
            trace, parent = bytes.fromhex(trace_hex), bytes.fromhex(parent_hex)

            before = await call(client, "get_todo", id=todo.id)
            assert before["notes"] == [] and before["spans"] == {"count": 0, "errors": 0}

            post_proto(live, personas.key_a, request([chat(trace, parent, 500)]))
            post_proto(live, personas.key_a, request([failed_tool(trace, parent)]))
            await call(client, "heartbeat", id=todo.id, note="read the thread")
            await call(client, "heartbeat", id=todo.id, note="drafting the summary")
            detail = await call(client, "get_todo", id=todo.id)
            usage = detail["todo"]["usage"]
            assert usage["tokens"]["input"] == 100 and usage["tokens"]["output"] == 500
            assert usage["cost_usd"] == pytest.approx(0.00525)
            assert usage["unpriced_tokens"] == 0
            assert detail["todo"]["max_cost_usd"] == 0.01
            assert detail["attempts"][0]["usage"]["cost_usd"] == pytest.approx(0.00525)
            # What the MCP App shows as it follows the todo: its spans counted, newest notes.
            assert detail["spans"] == {"count": 2, "errors": 1}
            notes = detail["notes"]
            assert [n["text"] for n in notes] == ["drafting the summary", "read the thread"]
            assert {n["attempt_seq"] for n in notes} == {1} and not notes[0]["truncated"]
            assert notes[0]["at"].endswith("Z") and notes[0]["at"] >= notes[1]["at"]
            resource = await client.read_resource(f"switchboard://todos/{todo.id}")
            assert json.loads(resource.contents[0].text)["spans"] == detail["spans"]
            await call(client, "heartbeat", id=todo.id)

            post_proto(live, personas.key_a, request([chat(trace, parent, 600)]))
            stopped = error_of(await client.call_tool("heartbeat", {"id": todo.id}))
            assert stopped["code"] == "budget_exceeded"
            assert stopped["by"] == "sweeper"
            assert stopped["reason"] == "max_cost_usd $0.01 reached ($0.01 spent)"

    run(scenario())
