"""Over MCP HTTP with the official client SDK: a claim someone else ends reaches its holder.
A finish_by passing while the agent heartbeats dead-letters the todo with a timed_out attempt,
and the agent's next heartbeat answers ``timed_out``; a cancel on the Board answers
``canceled`` to the holder, ``conflict`` to the holder with a wrong fence; a session listening
to the todo's resource hears the cancel at once."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from mcp import Client

from attempts import fence
from switchboard.scope import Scope
from tests.base import Personas
from tests.mcp.conftest import MODES, LiveServer, error_of, mcp_client, run
from tests.mcp.test_doorbell import RING_SECONDS, db
from tests.mcp.test_tools import call, call_error
from tests.rows import attempt_rows
from todos import lifecycle
from todos.models import Todo

pytestmark = pytest.mark.django_db(transaction=True)


async def claim(client: Client, todo_id: str) -> dict[str, Any]:
    got = await call(client, "claim", id=todo_id, require_fence=True, lease_ttl_seconds=60)
    assert isinstance(got["lease_token"], str)
    return got


@pytest.mark.parametrize("mode", MODES)
def test_finish_by_passing_under_a_heartbeating_agent_answers_timed_out(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    finish_by = timezone.now() + timedelta(seconds=3)
    todo = lifecycle.create(personas.endpoint_a.id, queue="q", finish_by=finish_by)

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, mode) as client:
            got = await claim(client, todo.id)
            token = got["lease_token"]
            # The lease stops at finish_by, and the todo says when the run must end.
            assert got["todo"]["run_deadline"] == got["todo"]["finish_by"]
            assert got["todo"]["lease_expires_at"] == got["todo"]["finish_by"]
            swept: tuple[str, ...] = ()
            answer: dict[str, Any] | None = None
            for _ in range(40):  # the agent heartbeats every 0.25 s, the sweeper runs beside
                result = await client.call_tool(
                    "heartbeat", {"id": todo.id, "lease_token": token, "lease_ttl_seconds": 60}
                )
                if result.is_error:
                    answer = error_of(result)
                    break
                assert isinstance(result.structured_content, dict)
                assert result.structured_content["lease_expires_at"] <= got["todo"]["finish_by"]
                swept += await db(lifecycle.dead_letter_late)
                await asyncio.sleep(0.25)
            assert swept == (todo.id,)
            assert answer is not None
            assert answer["code"] == "timed_out"
            assert (answer["reason"], answer["by"], answer["by_name"]) == (
                "finish_by",
                "sweeper",
                "sweeper",
            )

    run(scenario())
    row = Todo.objects.get(pk=todo.id)
    assert row.dead_letter
    [attempt] = attempt_rows(todo.id)
    assert (attempt["outcome"], attempt["disposition"]) == ("timed_out", "dead_lettered")


@pytest.mark.parametrize("mode", MODES)
def test_a_board_cancel_answers_canceled_to_the_holder_and_conflict_to_a_wrong_fence(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="q")

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, mode) as client:
            token = (await claim(client, todo.id))["lease_token"]
            await db(
                lifecycle.cancel,
                Scope.of_human(personas.alice.id),
                todo.id,
                reason="duplicate of #41",
            )
            wrong = await call_error(client, "heartbeat", id=todo.id, lease_token=fence.mint()[0])
            assert wrong["code"] == "conflict"
            assert "reason" not in wrong and "by" not in wrong
            for tool in ("heartbeat", "complete", "fail", "release"):
                error = await call_error(client, tool, id=todo.id, lease_token=token)
                assert error["code"] == "canceled", tool
                assert error["reason"] == "duplicate of #41"
                assert error["by"] == f"human:{personas.alice.id}"
                assert error["by_name"] == personas.alice.username

        async with mcp_client(live.mcp_url("agent-b"), personas.key_b, mode) as other:
            error = await call_error(other, "heartbeat", id=todo.id, lease_token=token)
            assert error["code"] == "not_found"

    run(scenario())


def test_a_session_listening_to_the_todo_hears_its_cancel_at_once(
    live: LiveServer, personas: Personas
) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="q")
    uri = f"switchboard://todos/{todo.id}"

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, "2026-07-28") as client:
            await claim(client, todo.id)
            async with client.listen(resource_subscriptions=[uri]) as sub:
                assert sub.honored.resource_subscriptions == [uri]
                heard: asyncio.Queue[str] = asyncio.Queue()

                async def pump() -> None:
                    async for event in sub:
                        heard.put_nowait(getattr(event, "uri", ""))

                task = asyncio.create_task(pump())
                try:
                    await db(lifecycle.cancel, Scope.of_human(personas.alice.id), todo.id)
                    assert await asyncio.wait_for(heard.get(), RING_SECONDS) == uri
                finally:
                    task.cancel()

    run(scenario())
