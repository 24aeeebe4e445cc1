"""One change feed across processes: two daphne servers and a sweeper in a third process, no
Redis. A lease lapses; the sweeper (which listens to nothing) reaps it, and its statement's
announcement reaches an open trail page's WebSocket on one server and an A2A task stream on the
other, each through its own process's listener (switchboard/lib/changefeed.py), within a
second of the reap: no channel layer carries it between processes, and A2A no longer polls.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import html
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2
import pytest
from a2a.types import SubscribeToTaskRequest, TaskState
from django.db import connection
from websockets.asyncio.client import connect

from attempts.models import TodoAttempt
from tests.a2a.test_a2a import a2a, a2a_endpoint, message, send
from tests.activity.test_live_servers import cookie_header, log_in
from tests.base import Personas
from tests.live import ROOT, LiveServer, run, start_servers, stop_servers
from tests.reach import OWNER, expire_lease
from todos import lifecycle

pytestmark = pytest.mark.django_db(transaction=True)

ARRIVAL_SECONDS = 1.0  # the promise: within a second of the reap (the old A2A poll was 2 s)
WAIT_SECONDS = 15.0  # how long the sweeper may take to get round to the reap at all


@pytest.fixture(scope="module")
def servers(
    daphne_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, LiveServer, dict[str, str]]]:
    """Two daphne processes on the test database with the in-memory channel layer."""
    env = {k: v for k, v in daphne_env.items() if k != "REDIS_URL"}
    started = start_servers(env, tmp_path_factory.mktemp("feed"), 2)
    try:
        yield started[0], started[1], env
    finally:
        stop_servers(started)


@pytest.fixture
def sweeper(
    servers: tuple[LiveServer, LiveServer, dict[str, str]], tmp_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """``manage.py sweeper`` in a process of its own, sweeping every 0.2 s."""
    log = tmp_path / "sweeper.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "sweeper", "--interval", "0.2"],
            cwd=ROOT,
            env=servers[2],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _in_thread(work: Callable[[], object]) -> None:
    """Run ORM work on a worker thread and close the connection it opened there."""
    try:
        work()
    finally:
        connection.close()


def _reaped_at(todo_id: str) -> dt.datetime | None:
    attempt = TodoAttempt.objects.filter(todo_id=todo_id, outcome="reaped").first()
    return None if attempt is None else attempt.ended_at


def test_a_reap_by_the_sweeper_reaches_a_page_and_an_a2a_stream_on_two_servers(
    servers: tuple[LiveServer, LiveServer, dict[str, str]],
    sweeper: subprocess.Popen[bytes],
    personas: Personas,
) -> None:
    a, b, _ = servers
    endpoint, requester, _ = a2a_endpoint(personas.alice, "feed")

    async def scenario() -> tuple[float, float, str, str]:
        async with (
            a2a(a, "feed", requester, "1.0") as sender,
            a2a(a, "feed", requester, "1.0", streaming=True) as client,
            httpx2.AsyncClient(timeout=30) as http,
        ):
            task = await send(sender, message("watch me"))
            todo_id = task.id
            await asyncio.to_thread(
                _in_thread, lambda: lifecycle.claim(endpoint.id, todo_id, owner=OWNER)
            )
            await log_in(http, b, "alice")
            page = await http.get(b.url(f"/todos/{todo_id}"))
            found = re.search(r'ws-connect="([^"]*)"', page.text)
            assert found is not None
            url = f"ws://127.0.0.1:{b.port}{html.unescape(found[1])}"
            stream = client.subscribe(SubscribeToTaskRequest(id=todo_id))
            first = await anext(stream)
            assert first.task.status.state == TaskState.TASK_STATE_WORKING
            async with connect(
                url, origin=b.base, additional_headers={"Cookie": cookie_header(http)}
            ) as ws:
                await asyncio.wait_for(ws.recv(), 5)  # the container every connect sends

                async def page_arrival() -> tuple[float, str]:
                    while True:
                        pushed = await ws.recv()
                        assert isinstance(pushed, str)
                        if "state-pending" in pushed:
                            return time.time(), pushed

                async def stream_arrival() -> float:
                    async for event in stream:
                        if event.HasField("status_update"):
                            state = event.status_update.status.state
                            assert state == TaskState.TASK_STATE_SUBMITTED
                            return time.time()
                    raise AssertionError("the stream ended without the reap")

                await asyncio.to_thread(_in_thread, lambda: expire_lease(todo_id))
                (on_page, pushed), on_stream = await asyncio.wait_for(
                    asyncio.gather(page_arrival(), stream_arrival()), WAIT_SECONDS
                )
                return on_page, on_stream, todo_id, pushed

    on_page, on_stream, todo_id, pushed = run(scenario())
    reaped_at = _reaped_at(todo_id)
    assert reaped_at is not None, "the sweeper did not reap"
    assert 'id="attempt-1-end"' in pushed  # the page shows the reaped attempt's end
    # The attempt's end is the reap statement's now(); the commit follows within milliseconds.
    page_seconds = on_page - reaped_at.timestamp()
    stream_seconds = on_stream - reaped_at.timestamp()
    assert page_seconds < ARRIVAL_SECONDS, f"the page heard the reap after {page_seconds:.3f} s"
    assert stream_seconds < ARRIVAL_SECONDS, f"the stream heard it after {stream_seconds:.3f} s"
