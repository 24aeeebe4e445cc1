"""A claim's trace: stored on the attempt, minted when the claim carries none, shown by get_todo.

Over MCP with the official client, against the live server; then a span exported under the
minted traceparent binds with no attribute at all.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from attempts.models import TodoAttempt
from otlp.models import TodoSpan
from switchboard.lib import traceparent as tp
from tests.base import Personas
from tests.live import LiveServer, mcp_client, run
from tests.otlp.helpers import SpanSpec, post_proto, request, span_id
from todos import lifecycle

pytestmark = pytest.mark.django_db(transaction=True)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.structured_content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def test_a_claim_without_a_traceparent_gets_one_minted_and_its_spans_bind_by_it(
    live_daphne: LiveServer, personas: Personas
) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="q")

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with mcp_client(live_daphne.mcp_url("agent-a"), personas.key_a, "2026-07-28") as c:
            claimed = await call(c, "claim_next", queue="q")
            return claimed, await call(c, "get_todo", id=todo.id)

    claimed, detail = run(scenario())
    minted = tp.parse(claimed["traceparent"])
    assert minted is not None and minted.sampled
    attempt = TodoAttempt.objects.get(todo_id=todo.id, seq=1)
    assert bytes(attempt.trace_id or b"").hex() == minted.trace_id
    (shown,) = detail["attempts"]
    assert shown["trace_id"] == minted.trace_id and shown["spans_dropped"] == 0

    # An agent that adopts the traceparent as its parent context needs nothing else.
    trace = bytes.fromhex(minted.trace_id)
    child = SpanSpec(trace, parent=bytes.fromhex(minted.parent_id), name="invoke_agent")
    answer = post_proto(live_daphne, personas.key_a, request([child]))
    assert not answer.HasField("partial_success")
    assert TodoSpan.objects.get(todo_id=todo.id).attempt_seq == 1


def test_a_claim_stores_the_traceparent_it_carried_and_each_claim_mints_its_own(
    live_daphne: LiveServer, personas: Personas
) -> None:
    lifecycle.create(personas.endpoint_a.id, queue="q")
    one = lifecycle.create(personas.endpoint_a.id, queue="r")
    two = lifecycle.create(personas.endpoint_a.id, queue="r")
    given = f"00-{'4bf92f3577b34da6a3ce929d0e0e4736'}-{span_id().hex()}-01"

    async def scenario() -> list[dict[str, Any]]:
        async with mcp_client(live_daphne.mcp_url("agent-a"), personas.key_a, "legacy") as c:
            return [
                await call(c, "claim_next", queue="q", traceparent=given),
                await call(c, "claim", id=one.id),
                await call(c, "claim", id=two.id),
            ]

    carried, first, second = run(scenario())

    assert carried["traceparent"] == given
    stored = {a.todo_id: bytes(a.trace_id or b"").hex() for a in TodoAttempt.objects.filter(seq=1)}
    assert stored[carried["todo"]["id"]] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert first["traceparent"] != second["traceparent"]
    assert stored[one.id] == first["traceparent"].split("-")[1]


def test_minted_traceparents_are_valid_and_never_zero() -> None:
    for _ in range(200):
        minted = tp.mint()
        assert tp.parse(str(minted)) == minted
        assert int(minted.trace_id, 16) and int(minted.parent_id, 16)


@pytest.mark.parametrize("bad", [b"\x00" * 16, b"short", b"x" * 17])
def test_the_lifecycle_refuses_a_trace_id_that_is_not_16_bytes_or_is_zero(
    personas: Personas, bad: bytes
) -> None:
    from switchboard.lib.errors import InvalidInput

    lifecycle.create(personas.endpoint_a.id, queue="q")
    with pytest.raises(InvalidInput, match="trace_id"):
        lifecycle.claim_next(personas.endpoint_a.id, ["q"], owner="endpoint:x", trace_id=bad)
