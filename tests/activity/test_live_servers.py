"""Live updates across processes: two daphne servers on one Redis channel layer
(``redis_servers``, tests/live.py). A human logged in on server A watches a trail page served
by B over a real WebSocket; an agent's note over MCP and a Board action, both through A, reach
the socket on B, and each change reaches it once although both servers hear it.
"""

from __future__ import annotations

import asyncio
import html
import re
import time

import httpx2
import pytest
from django.db import connection
from websockets.asyncio.client import ClientConnection, connect

from tests.base import Personas
from tests.live import LiveServer, mcp_client, redis_env, run
from todos import lifecycle

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct horse battery staple"  # the personas' (tests/factories.py)
MCP_MODE = "2026-07-28"
ARRIVAL_SECONDS = 2.0  # the promise: an open page shows a change within 2 s


async def log_in(http: httpx2.AsyncClient, server: LiveServer, username: str) -> None:
    """Log in through the login form, as a browser would; the cookies stay in ``http``."""
    form = await http.get(server.url("/login/"))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert token is not None
    done = await http.post(
        server.url("/login/"),
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token[1]},
        headers={"Referer": server.url("/login/")},
    )
    assert done.status_code == 302, done.text


def cookie_header(http: httpx2.AsyncClient) -> str:
    return "; ".join(f"{name}={value}" for name, value in http.cookies.items())


async def arrival(ws: ClientConnection, needle: str) -> str:
    """The first message holding ``needle``, within ARRIVAL_SECONDS of now."""
    deadline = time.monotonic() + ARRIVAL_SECONDS
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"{needle!r} did not arrive within {ARRIVAL_SECONDS} s"
        message = await asyncio.wait_for(ws.recv(), left)
        assert isinstance(message, str)
        if needle in message:
            return message


def test_a_change_made_through_one_server_reaches_a_socket_on_the_other(
    redis_servers: tuple[LiveServer, LiveServer], personas: Personas
) -> None:
    a, b = redis_servers
    todo = lifecycle.create(personas.endpoint_a.id, queue="live", title="watched from B")

    async def scenario() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            await log_in(http, a, "alice")
            page = await http.get(b.url(f"/todos/{todo.id}"))
            assert page.status_code == 200
            found = re.search(r'ws-connect="([^"]*)"', page.text)
            assert found is not None
            url = f"ws://127.0.0.1:{b.port}{html.unescape(found[1])}"
            async with connect(
                url, origin=b.base, additional_headers={"Cookie": cookie_header(http)}
            ) as ws:
                # Every connect sends the container first: live on B before anything happens.
                await arrival(ws, f'id="sb-trail-live-{todo.id}"')
                async with mcp_client(a.mcp_url("agent-a"), personas.key_a, MCP_MODE) as agent:
                    claimed = await agent.call_tool("claim", {"id": todo.id})
                    assert not claimed.is_error, claimed.structured_content
                    beat = await agent.call_tool(
                        "heartbeat", {"id": todo.id, "note": "halfway, said through A"}
                    )
                    assert not beat.is_error, beat.structured_content
                await arrival(ws, "halfway, said through A")
                # A Board action through A (the trail page's own form).
                trail = await http.get(a.url(f"/todos/{todo.id}"))
                token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', trail.text)
                assert token is not None
                released = await http.post(
                    a.url(f"/todos/{todo.id}/release"),
                    data={"csrfmiddlewaretoken": token[1], "summary": "back to the queue"},
                    headers={"Referer": a.url(f"/todos/{todo.id}")},
                )
                assert released.status_code == 302, released.text
                pushed = await arrival(ws, "released it to its queue")
                assert '<span class="badge state-pending">pending</span>' in pushed

    run(scenario())


def _release(human_id: int, todo_id: str) -> None:
    try:
        lifecycle.operator_release(human_id, todo_id)
    finally:
        connection.close()  # the worker thread's own


def test_with_a_shared_redis_layer_a_socket_hears_each_change_once(
    redis_servers: tuple[LiveServer, LiveServer], personas: Personas
) -> None:
    # Both servers hear the change from the database; were each to send it to a group on the
    # shared layer, the socket would get it twice (activity/live.py sends to its own sockets).
    a, b = redis_servers
    todo = lifecycle.create(personas.endpoint_a.id, queue="live", title="heard once")
    lifecycle.claim(personas.endpoint_a.id, todo.id, owner="agent")

    async def scenario() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            await log_in(http, a, "alice")
            page = await http.get(b.url(f"/todos/{todo.id}"))
            found = re.search(r'ws-connect="([^"]*)"', page.text)
            assert found is not None
            url = f"ws://127.0.0.1:{b.port}{html.unescape(found[1])}"
            async with connect(
                url, origin=b.base, additional_headers={"Cookie": cookie_header(http)}
            ) as ws:
                await arrival(ws, f'id="sb-trail-live-{todo.id}"')
                await asyncio.to_thread(_release, personas.alice.id, todo.id)
                await arrival(ws, "released it to its queue")
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(ws.recv(), 1.0)

    run(scenario())


def test_an_idle_consumer_on_the_redis_layer_outlives_the_blocking_pop() -> None:
    """channels_redis blocks 5 s in BZPOPMIN per receive; redis-py 8's default socket timeout is
    5 s too, so an idle receive raised "Timeout reading" and the socket closed 1011. With the
    layer's options (settings.REDIS_LAYER_OPTIONS) an idle receive outlasts several pops."""
    from channels_redis.core import RedisChannelLayer
    from django.conf import settings

    env = redis_env()
    layer = RedisChannelLayer(
        hosts=[{"address": env["REDIS_URL"], **settings.REDIS_LAYER_OPTIONS}],
        prefix=env["SWITCHBOARD_CHANNEL_PREFIX"],
    )

    async def idle() -> None:
        channel = await layer.new_channel()
        with pytest.raises(TimeoutError):  # nothing came: the wait ran out, not the socket
            await asyncio.wait_for(layer.receive(channel), 6.5)
        await layer.send(channel, {"type": "x"})
        assert await asyncio.wait_for(layer.receive(channel), 2) == {"type": "x"}
        await layer.flush()

    run(idle())
