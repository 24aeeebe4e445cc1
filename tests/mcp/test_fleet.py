"""The fleet's live side over real HTTP with the official SDK client: an MCP call moves the
endpoint's last seen (at most once a minute per key), and subscription streams open on two
server processes are counted for the Board, in both eras, until they close."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from uuid import UUID

import pytest
from django.db import connection

from switchboard.auth import KEY_CACHE_SECONDS
from switchboard.lib.sql import fetch_all
from switchboard.models import EndpointKey
from switchboard.scope import Scope
from tests.base import Personas
from tests.mcp.conftest import MODES, LiveServer, mcp_client, run
from tests.mcp.test_doorbell import db, subscriber
from todos import fleet

pytestmark = pytest.mark.django_db(transaction=True)

MODERN = MODES[0]
# How long a stream's opening or closing may take to reach the Board: the reporter writes as
# soon as it wakes; the rest is the two processes being scheduled on a loaded machine.
COUNT_SECONDS = 5.0


def _last_used(endpoint_id: UUID) -> dt.datetime | None:
    value: dt.datetime | None = EndpointKey.objects.values_list("last_used_at", flat=True).get(
        endpoint_id=endpoint_id
    )
    return value


def _call(live: LiveServer, key: str) -> None:
    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), key, MODERN) as client:
            result = await client.call_tool("list_todos", {})
            assert not result.is_error, result

    run(scenario())
    # The next call must miss the server's key cache, so it asks the database again.
    time.sleep(KEY_CACHE_SECONDS + 0.2)


def test_an_mcp_call_moves_last_seen_at_most_once_a_minute_per_key(
    live: LiveServer, personas: Personas
) -> None:
    a = personas.endpoint_a.id
    alice = Scope.of_human(personas.alice.id)
    assert _last_used(a) is None and fleet.fleet(alice, [a])[a].last_seen_at is None

    _call(live, personas.key_a)
    first = _last_used(a)
    assert first is not None
    assert fleet.fleet(alice, [a])[a].last_seen_at == first

    _call(live, personas.key_a)
    assert _last_used(a) == first  # within the minute: no write

    fetch_all(
        "UPDATE endpoint_keys SET last_used_at = now() - interval '61 seconds'"
        " WHERE endpoint_id = %(e)s RETURNING id",
        {"e": a},
    )
    aged = _last_used(a)
    assert aged is not None
    _call(live, personas.key_a)
    moved = _last_used(a)
    assert moved is not None and moved > aged
    assert fleet.fleet(alice, [a])[a].last_seen_at == moved
    # Bob's endpoint was never called.
    assert _last_used(personas.endpoint_b.id) is None


def _open_streams(human_id: int, endpoint_id: UUID) -> int:
    try:
        return fleet.fleet(Scope.of_human(human_id), [endpoint_id])[endpoint_id].open_streams
    finally:
        connection.close()


async def _counted(human_id: int, endpoint_id: UUID, expected: int) -> int:
    """The Board's count of the endpoint's open streams, once it is ``expected`` (or the last
    one read when COUNT_SECONDS ran out)."""
    deadline = time.monotonic() + COUNT_SECONDS
    while True:
        count = await db(_open_streams, human_id, endpoint_id)
        if count == expected or time.monotonic() > deadline:
            return count
        await asyncio.sleep(0.1)


def test_subscription_streams_on_two_processes_are_counted_until_they_close(
    live_servers: tuple[LiveServer, LiveServer], personas: Personas
) -> None:
    one, two = live_servers
    alice, bob = personas.alice.id, personas.bob.id
    a, b = personas.endpoint_a.id, personas.endpoint_b.id

    async def scenario() -> None:
        assert await _counted(alice, a, 0) == 0
        async with (
            subscriber(one, "agent-a", personas.key_a, MODERN),
            subscriber(two, "agent-a", personas.key_a, "legacy"),
            subscriber(two, "agent-b", personas.key_b, MODERN),
        ):
            assert await _counted(alice, a, 2) == 2
            assert await _counted(bob, b, 1) == 1
            async with subscriber(two, "agent-a", personas.key_a, MODERN):
                assert await _counted(alice, a, 3) == 3
            assert await _counted(alice, a, 2) == 2
        assert await _counted(alice, a, 0) == 0
        assert await _counted(bob, b, 0) == 0

    run(scenario())
