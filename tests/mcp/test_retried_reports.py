"""Over MCP with the official client SDK: a retried complete or fail whose first answer was lost
answers the same success, and get_todo shows the open attempt's real lease."""

from __future__ import annotations

from typing import Any

import pytest

from tests.base import Personas
from tests.mcp.conftest import MODES, LiveServer, mcp_client, run
from tests.mcp.test_tools import call, call_error
from tests.rows import open_attempts, snapshot
from todos import lifecycle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.parametrize("mode", MODES)]


def test_a_retried_complete_answers_the_same_success(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="q")
    url = live.mcp_url("agent-a")
    first: dict[str, Any] = {}

    async def report() -> None:
        async with mcp_client(url, personas.key_a, mode) as client:
            claimed = await call(client, "claim", id=todo.id, require_fence=True)
            first["token"] = claimed["lease_token"]
            first["answer"] = await call(
                client, "complete", id=todo.id, lease_token=first["token"], summary="ok"
            )

    run(report())
    before = snapshot(todo.id)

    async def retry() -> None:
        # The agent never saw the first answer (a dropped connection) and sends it again, on a
        # new session.
        async with mcp_client(url, personas.key_a, mode) as client:
            token = first["token"]
            again = await call(client, "complete", id=todo.id, lease_token=token, summary="ok")
            assert again == first["answer"]
            assert (again["state"], again["attempt_seq"]) == ("completed", 1)
            # Not the holder's own report, or not the holder: the same conflict as before.
            error = await call_error(client, "fail", id=todo.id, lease_token=token)
            assert error["code"] == "conflict"
            error = await call_error(client, "complete", id=todo.id, lease_token="A" * 22)
            assert error["code"] == "conflict"

    run(retry())
    assert snapshot(todo.id) == before


def test_a_retried_fail_answers_the_same_success(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="q")

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, mode) as client:
            await call(client, "claim", id=todo.id)
            first = await call(client, "fail", id=todo.id, summary="red")
            again = await call(client, "fail", id=todo.id, summary="red")
            assert again == first
            assert again["state"] == "failed" and again["next_retry_at"] is not None

    run(scenario())


def test_get_todo_shows_the_real_lease_of_the_open_attempt(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="q")

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, mode) as client:
            await call(client, "claim", id=todo.id, lease_ttl_seconds=60)
            await call(client, "heartbeat", id=todo.id, lease_ttl_seconds=60)  # sampled write
            # Within the minute: the todo's lease moves, the attempt's copy does not.
            beat = await call(client, "heartbeat", id=todo.id, lease_ttl_seconds=3600)
            detail = await call(client, "get_todo", id=todo.id)
            assert detail["todo"]["lease_expires_at"] == beat["lease_expires_at"]
            assert detail["attempts"][0]["lease_expires_at"] == beat["lease_expires_at"]

    run(scenario())
    [stored] = open_attempts(todo.id)
    assert stored["lease_expires_at"] < snapshot(todo.id)[0]["lease_expires_at"]
