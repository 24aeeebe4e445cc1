"""The doorbell over real HTTP: todo_ready → notifications/resources/updated, in both eras.

Modern clients listen with ``subscriptions/listen``; legacy clients ``resources/subscribe`` and
hear it on their GET stream (which the SDK opens by itself after the handshake). Each test
drives the lifecycle from worker threads (committed, so the servers' LISTEN connections hear
it) while the client side waits on the live servers.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import httpx2
import mcp_types as types
import pytest
from django.db import connection
from django.utils import timezone
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning

from mcp_server import doorbell
from switchboard.models import Endpoint
from tests.base import Personas
from tests.mcp.conftest import MODES, LiveServer, run
from tests.mcp.wire import assert_jsonrpc_error, initialize, legacy_headers, post
from todos import lifecycle
from todos.models import Todo

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "bell"
URI = "switchboard://queues/bell"
RING_SECONDS = 2.0  # the doorbell's promise: a ring within 2 s of the commit
QUIET_SECONDS = 1.0  # how long "no ring" is watched for
LEGACY_VERSION = "2025-11-25"


async def db[T](func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ORM/lifecycle work in a worker thread (and close its connection, so the test
    database can be dropped at the end of the session)."""

    def call() -> T:
        try:
            return func(*args, **kwargs)
        finally:
            connection.close()

    return await asyncio.to_thread(call)


class Bell:
    """The rings one subscriber hears, whichever era delivered them."""

    def __init__(self) -> None:
        self.rings: asyncio.Queue[str] = asyncio.Queue()
        self.capabilities: types.ServerCapabilities | None = None

    async def ring(self, timeout: float = RING_SECONDS) -> str | None:
        try:
            return await asyncio.wait_for(self.rings.get(), timeout)
        except TimeoutError:
            return None

    async def drain(self, seconds: float = 0.3) -> None:
        while await self.ring(seconds) is not None:
            pass


@asynccontextmanager
async def subscriber(
    server: LiveServer,
    slug: str,
    key: str,
    mode: str,
    *,
    subscribe_via: LiveServer | None = None,
) -> AsyncIterator[Bell]:
    """A client subscribed to ``URI``, live by the time this yields.

    Legacy: the SDK opens its GET stream in the background after ``initialized``, and nothing
    tells the client when it is up; so rings are probed (a todo created per try) until one is
    heard, which proves the stream and the subscription, and then drained. ``subscribe_via``
    sends the ``resources/subscribe`` POST to another server process than the GET stream's.
    """
    bell = Bell()
    session_ids: list[str] = []

    async def keep_session_id(response: httpx2.Response) -> None:
        if (sid := response.headers.get("mcp-session-id")) is not None:
            session_ids.append(sid)

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            bell.rings.put_nowait(str(message.params.uri))

    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(
        headers=headers, timeout=30, event_hooks={"response": [keep_session_id]}
    ) as http:
        transport = streamable_http_client(server.mcp_url(slug), http_client=http)
        # Legacy rings arrive through the message handler; modern ones through the listen
        # iterator (the SDK hands them to the message handler as well, so only one is used).
        handler = on_message if mode == "legacy" else None
        async with Client(transport, mode=mode, message_handler=handler) as client:
            if mode == "legacy":  # the handshake's; a pinned modern client skips discovery
                bell.capabilities = client.server_capabilities
            if mode != "legacy":
                async with client.listen(resource_subscriptions=[URI]) as sub:
                    assert sub.honored.resource_subscriptions == [URI]

                    async def pump() -> None:
                        async for event in sub:
                            bell.rings.put_nowait(getattr(event, "uri", ""))

                    task = asyncio.create_task(pump())
                    try:
                        yield bell
                    finally:
                        task.cancel()
                return
            if subscribe_via is None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await client.subscribe_resource(URI)
            else:
                answer = await http.post(
                    subscribe_via.mcp_url(slug),
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "resources/subscribe",
                        "params": {"uri": URI},
                    },
                    headers={
                        "Accept": "application/json, text/event-stream",
                        "Mcp-Session-Id": session_ids[-1],
                        "MCP-Protocol-Version": LEGACY_VERSION,
                    },
                )
                assert answer.status_code == 200, answer.text
                assert answer.json()["result"] == {}
            endpoint_id = await db(lambda: _endpoint_id(slug))
            for _ in range(20):
                await db(lifecycle.create, endpoint_id, queue=QUEUE, title="probe")
                if await bell.ring(0.5) is not None:
                    break
            else:
                raise AssertionError("the legacy GET stream never rang")
            await bell.drain()
            yield bell


def _endpoint_id(slug: str) -> Any:
    return Endpoint.objects.get(slug=slug).id


async def rings_within(bell: Bell, seconds: float = RING_SECONDS) -> float:
    started = time.monotonic()
    assert await bell.ring(seconds) == URI
    return time.monotonic() - started


@pytest.mark.parametrize("mode", MODES)
def test_a_subscriber_hears_a_new_todo_and_a_foreign_one_does_not(
    live_servers: tuple[LiveServer, LiveServer], personas: Personas, mode: str
) -> None:
    a, _ = live_servers
    owner = personas.endpoint_a.id

    async def scenario() -> None:
        async with (
            subscriber(a, "agent-a", personas.key_a, mode) as alice,
            subscriber(a, "agent-b", personas.key_b, mode) as bob,
        ):
            if mode == "legacy":
                assert alice.capabilities is not None and alice.capabilities.resources
                assert alice.capabilities.resources.subscribe is True
            todo = await db(lifecycle.create, owner, queue=QUEUE, title="x")
            assert await rings_within(alice) < RING_SECONDS
            # Bob watches a queue of the same name on his own endpoint: not his todo.
            assert await bob.ring(QUIET_SECONDS) is None
            # Another queue of Alice's does not ring her subscription to this one.
            other = await db(lifecycle.create, owner, queue="other", title="y")
            assert await alice.ring(QUIET_SECONDS) is None
            # The ring left a `rung` row on the todo (committed before it went out); the todo
            # nobody was ringed about has none.
            (rung,) = await db(_rungs, todo.id)
            assert (rung["subscribers"], rung["reason"]) == (1, "ready")
            assert await db(_rungs, other.id) == []

    run(scenario())


def _rungs(todo_id: str) -> list[Any]:
    rows = (
        Todo.objects.get(id=todo_id)
        .activity.filter(kind="rung")
        .order_by("seq")
        .values_list("detail", flat=True)
    )
    return list(rows)


def test_a_legacy_subscription_taken_by_another_process_takes_effect(
    live_servers: tuple[LiveServer, LiveServer], personas: Personas
) -> None:
    a, b = live_servers

    async def scenario() -> None:
        # The GET stream is held by A; the subscribe POST is answered by B.
        async with subscriber(a, "agent-a", personas.key_a, "legacy", subscribe_via=b) as bell:
            await db(lifecycle.create, personas.endpoint_a.id, queue=QUEUE, title="x")
            await rings_within(bell)

    run(scenario())


def _open_the_gate(todo_id: str) -> None:
    """Move the todo's last ring a gate's length into the past (PostgreSQL's clock, not ours)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE todos SET last_ringed_at = last_ringed_at - interval '61 seconds'"
            " WHERE id = %s",
            [todo_id],
        )


@pytest.mark.parametrize("mode", MODES)
def test_the_gate_is_shared_delays_a_ring_and_a_due_retry_passes_it(
    live_servers: tuple[LiveServer, LiveServer], personas: Personas, mode: str
) -> None:
    a, b = live_servers
    endpoint = personas.endpoint_a.id
    owner = "endpoint:agent-a"

    async def scenario() -> None:
        # One subscriber on each server process: both processes try the gate for every todo.
        async with (
            subscriber(a, "agent-a", personas.key_a, mode) as first,
            subscriber(b, "agent-a", personas.key_a, mode) as second,
        ):
            await first.drain()  # the second's legacy probes (new todos) rang the first too
            todo = await db(lifecycle.create, endpoint, queue=QUEUE, title="bouncing")
            await rings_within(first)
            await rings_within(second)
            # Two processes, one ring: one `rung` row, and neither subscriber hears it twice.
            assert len(await db(_rungs, todo.id)) == 1
            assert await first.ring(QUIET_SECONDS) is None
            assert await second.ring(QUIET_SECONDS) is None

            # Released inside the gate's minute: held, on every process, not dropped.
            await db(lifecycle.claim, endpoint, todo.id, owner=owner)
            await db(lifecycle.release, endpoint, todo.id, owner=owner)
            assert await first.ring(QUIET_SECONDS) is None
            assert await second.ring(0.1) is None
            assert await db(lifecycle.ring_due, "gate") == []  # the gate is still shut
            # When the gate opens, the sweeper's pass rings it, on both processes.
            await db(_open_the_gate, todo.id)
            (rung,) = await db(lifecycle.ring_due, "gate")
            assert (rung.todo_id, rung.reason) == (todo.id, "gate")
            await rings_within(first)
            await rings_within(second)
            assert [r["reason"] for r in await db(_rungs, todo.id)] == ["ready", "gate"]

            # A due retry clears the gate.
            await db(lifecycle.claim, endpoint, todo.id, owner=owner)
            await db(lifecycle.fail, endpoint, todo.id, owner=owner, retryable=True)
            past = timezone.now() - timedelta(seconds=1)
            await db(lambda: Todo.objects.filter(id=todo.id).update(next_retry_at=past))
            assert await db(lifecycle.requeue_due_retries) == (todo.id,)
            await rings_within(first)
            await rings_within(second)
            assert await db(lambda: Todo.objects.get(id=todo.id).ring_attempts) == 3

    run(scenario())


DOORBELL_BACKENDS = """
    SELECT pid FROM pg_stat_activity
     WHERE datname = current_database() AND application_name = 'switchboard-changefeed'
"""


def _terminate_listeners() -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pid, pg_terminate_backend(pid) FROM ({DOORBELL_BACKENDS}) d")
        return {row[0] for row in cursor.fetchall()}


def _listening_backends() -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(DOORBELL_BACKENDS + " AND query LIKE 'LISTEN todo_%'")
        return {row[0] for row in cursor.fetchall()}


@pytest.mark.parametrize("mode", MODES)
def test_the_listener_comes_back_after_its_backend_is_terminated(
    live_servers: tuple[LiveServer, LiveServer], personas: Personas, mode: str
) -> None:
    a, _ = live_servers

    async def scenario() -> None:
        async with subscriber(a, "agent-a", personas.key_a, mode) as bell:
            killed = await db(_terminate_listeners)
            assert killed
            deadline = time.monotonic() + 10
            while len(await db(_listening_backends) - killed) < len(killed):
                assert time.monotonic() < deadline, "the doorbell did not reconnect"
                await asyncio.sleep(0.1)
            # On reconnecting, the listener rings every watched queue once (notifications
            # sent while it was away are lost); that is not the ring under test.
            await bell.drain(0.5)
            await db(lifecycle.create, personas.endpoint_a.id, queue=QUEUE, title="after")
            await rings_within(bell)

    run(scenario())


def test_the_legacy_get_stream_and_subscribe_refuse_what_they_cannot_serve(
    live: LiveServer, personas: Personas
) -> None:
    session = initialize(live, personas.key_a)
    url = live.mcp_url("agent-a")
    stream_headers = {**legacy_headers(personas.key_a, session), "Accept": "text/event-stream"}
    with httpx2.stream("GET", url, headers=stream_headers, timeout=10) as opened:
        assert opened.status_code == 200
        assert opened.headers["content-type"] == "text/event-stream"
        assert next(opened.iter_bytes()).startswith(b":")  # a comment: the stream is open
    foreign = initialize(live, personas.key_b, "agent-b")
    refusals = [
        ({**stream_headers, "Mcp-Session-Id": foreign}, 404),
        ({**stream_headers, "Accept": "application/json"}, 406),
    ]
    for headers, status in refusals:
        assert_jsonrpc_error(httpx2.get(url, headers=headers, timeout=10), status, -32600)

    def subscribe(uri: str) -> Any:
        body = {"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": uri}}
        return post(live, legacy_headers(personas.key_a, session), body).json()

    assert subscribe(URI) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    # Queue summaries and todos ring (any todo id: only the endpoint's own todos ever ring, so
    # an unknown and a foreign id alike are silent); anything else is "not found", as
    # resources/read says.
    assert subscribe("switchboard://todos/td_aaaaaaaaaaaaaaaaaaaa")["result"] == {}
    assert subscribe("switchboard://elsewhere/x")["error"]["code"] == -32602


def test_legacy_subscriptions_are_capped_per_session(live: LiveServer, personas: Personas) -> None:
    session = initialize(live, personas.key_a)
    other = initialize(live, personas.key_a)

    def subscribe(sid: str, uri: str) -> Any:
        body = {"jsonrpc": "2.0", "id": 4, "method": "resources/subscribe", "params": {"uri": uri}}
        return post(live, legacy_headers(personas.key_a, sid), body).json()

    # The session fills its cap through the doorbell's own writer (as many POSTs would).
    for n in range(doorbell.MAX_SUBSCRIPTIONS_PER_SESSION - 1):
        doorbell.subscribe(session, personas.endpoint_a.id, f"switchboard://queues/q{n}")
    assert subscribe(session, URI) == {"jsonrpc": "2.0", "id": 4, "result": {}}

    refused = subscribe(session, "switchboard://queues/one-too-many")
    assert refused["error"]["code"] == -32600
    assert "at most 100 subscriptions" in refused["error"]["message"]
    # Renewing a subscription it holds is no new row; another session has a cap of its own.
    assert subscribe(session, URI) == {"jsonrpc": "2.0", "id": 4, "result": {}}
    assert subscribe(other, "switchboard://queues/one-too-many")["result"] == {}
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM mcp_subscriptions WHERE session_id = %s", [session])
        assert cursor.fetchone() == (doorbell.MAX_SUBSCRIPTIONS_PER_SESSION,)
