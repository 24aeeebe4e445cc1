"""A2A message metadata sets a new todo's time (priority, not_before, start_by, finish_by,
run_timeout_seconds, dedupe_key); bad time is refused as invalid params naming the key, with
nothing created; a requester's CancelTask reaches the holder's next MCP call as ``canceled``."""

from __future__ import annotations

import pytest
from a2a.types import CancelTaskRequest
from a2a.utils.errors import A2AError

from tests.a2a.test_a2a import a2a, a2a_endpoint, agent_call, message, send
from tests.base import Personas
from tests.live import LiveServer, mcp_client, run
from tests.mcp.conftest import error_of
from todos.models import Todo

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_metadata_sets_the_time_and_a_dedupe_key_answers_the_first_task(
    live: LiveServer, personas: Personas
) -> None:
    _, requester, _agent = a2a_endpoint(personas.alice, "front")

    async def scenario() -> None:
        async with a2a(live, "front", requester, "1.0") as client:
            msg = message("Summarise the incident", queue="triage")
            msg.metadata.update(
                {
                    "priority": 5,
                    "not_before": "+1m",
                    "finish_by": "+2h",
                    "run_timeout_seconds": 600,
                    "dedupe_key": "incident-7",
                }
            )
            first = await send(client, msg)
            again = await send(client, msg)
            assert again.id == first.id

    run(scenario())
    [todo] = Todo.objects.all()
    assert (todo.priority, todo.run_timeout_seconds, todo.dedupe_key) == (5, 600, "incident-7")
    assert todo.not_before is not None and todo.finish_by is not None
    assert todo.not_before < todo.finish_by


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("priority", 5000),
        ("finish_by", "2001-01-01T00:00:00Z"),
        ("start_by", "soon"),
        ("run_timeout_seconds", 5),
        ("priority", 2.5),
        # Instants PostgreSQL would store and Python could not read back (year 10000 in UTC,
        # year 0), and relative ones past what a datetime holds: refused, never stored.
        ("finish_by", "9999-12-31T23:59:59-12:00"),
        ("not_before", "0001-01-01T00:00:00+14:00"),
        ("finish_by", "+999999999d"),
        ("start_by", "+99999999h"),
        # Not time, but refused the same way: an empty queue name.
        ("queue", ""),
    ],
)
def test_bad_time_in_metadata_is_refused_naming_the_key(
    live: LiveServer, personas: Personas, key: str, value: object
) -> None:
    _, requester, _agent = a2a_endpoint(personas.alice, "front")

    async def scenario() -> None:
        async with a2a(live, "front", requester, "1.0") as client:
            msg = message("x")
            msg.metadata.update({key: value})
            with pytest.raises(A2AError, match=key):
                await send(client, msg)

    run(scenario())
    assert not Todo.objects.exists()


def test_a_requesters_cancel_answers_canceled_to_the_holder(
    live: LiveServer, personas: Personas
) -> None:
    _, requester, agent = a2a_endpoint(personas.alice, "front")
    url = live.mcp_url("front")

    async def scenario() -> None:
        async with a2a(live, "front", requester, "1.0") as client:
            task = await send(client, message("do it"))
            await agent_call(url, agent, "claim", id=task.id)
            await client.cancel_task(CancelTaskRequest(id=task.id))
        async with mcp_client(url, agent, "2026-07-28") as holder:
            error = error_of(await holder.call_tool("heartbeat", {"id": task.id}))
            assert error["code"] == "canceled"
            assert error["reason"] == "canceled by the A2A requester"

    run(scenario())
