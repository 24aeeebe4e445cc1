"""Live servers: the product's ASGI app under daphne, as ``make run`` serves it, on the test DB.

A pytest plugin (``tests/conftest.py`` loads it), so one server is shared by every directory that
needs one: the MCP tests talk to it with the official MCP client SDK, the browser tests drive the
Board on it with chromium and, in the same test, use a key vended there over MCP.

``live_daphne`` is one process; ``live_servers`` adds a second with the same SECRET_KEY (as a real
deployment's processes share one), so a legacy MCP session can be opened on one and continued on
the other. ``redis_servers`` is two more processes on one Redis channel layer (``REDIS_URL``,
else the local Redis) under a key prefix of this run's own, so a live update made through one
reaches a socket on the other. All stop before the test database is dropped. Tests that use
them must commit their rows for the servers to see them:
``pytest.mark.django_db(transaction=True)``, whose flush after each test also empties whatever
the servers wrote.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
import redis
from django.db import connection
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
# A server imports Django, the SDKs and the apps before it answers: on a loaded machine (2 cores
# shared with other test runs) that alone has taken over 30 s.
STARTUP_SECONDS = 60
LOCAL_REDIS = "redis://127.0.0.1:6379/0"


@dataclass(frozen=True)
class LiveServer:
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def mcp_url(self, slug: str) -> str:
        return f"{self.base}/mcp/{slug}"

    def log_tail(self, chars: int = 2000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _database_url() -> str:
    db = connection.settings_dict
    user = quote(db["USER"] or "")
    password = f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else ""
    # HOST may be a socket directory (the embedded server's): percent-encoded, it still parses.
    host = quote(db["HOST"] or "127.0.0.1", safe="")
    port = db["PORT"] or "5432"
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


def _start(env: dict[str, str], log: Path, app: str = "switchboard.asgi:application") -> LiveServer:
    port = _free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                *(
                    sys.executable,
                    "-m",
                    "switchboard.lib.server",
                    "--bind",
                    "127.0.0.1",
                    "--port",
                    str(port),
                ),
                app,
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return LiveServer(port, process, log)


def _wait_ready(server: LiveServer) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"daphne exited: {server.log_tail()}")
        try:
            if httpx2.get(f"{server.base}/healthz", timeout=1).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"daphne did not start: {server.log_tail()}")


def _stop(server: LiveServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@pytest.fixture(scope="session")
def daphne_env(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment every live server of the session shares: the test database, one key."""
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "SECRET_KEY": secrets.token_urlsafe(48),
        "SWITCHBOARD_DATA_DIR": str(tmp_path_factory.mktemp("live-data")),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SWITCHBOARD_MAX_BODY_BYTES": str(64 * 1024),
        # The test settings' fast password hasher, so the factories' passwords log in.
        "SWITCHBOARD_TESTING": "1",
        "PYTHONUNBUFFERED": "1",
    }
    # The browser tests lift Django's async guard in the test process; the server keeps it.
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    return env


@pytest.fixture(scope="session")
def live_daphne(
    daphne_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """One daphne process on the test database; stopped before the test database is dropped."""
    server = _start(daphne_env, tmp_path_factory.mktemp("live") / "a.log")
    try:
        _wait_ready(server)
        yield server
    finally:
        _stop(server)


def start_servers(
    env: dict[str, str],
    logs: Path,
    count: int,
    *,
    app: str = "switchboard.asgi:application",
    **extra_env: str,
) -> list[LiveServer]:
    """Start ``count`` daphne processes serving ``app`` on ``env`` plus ``extra_env`` and wait
    until they serve; stop them with ``stop_servers``. Any that started are stopped if one
    fails."""
    servers: list[LiveServer] = []
    try:
        for n in range(count):
            servers.append(_start({**env, **extra_env}, logs / f"{n}.log", app))
        for server in servers:
            _wait_ready(server)
    except BaseException:
        stop_servers(servers)
        raise
    return servers


def stop_servers(servers: list[LiveServer]) -> None:
    for server in servers:
        _stop(server)


def redis_env() -> dict[str, str]:
    """A Redis channel layer for live servers: ``REDIS_URL`` (else the local Redis) under a
    key prefix of this run's own, so parallel runs on one Redis never hear each other. Fails,
    never skips, when no Redis answers."""
    url = os.environ.get("REDIS_URL") or LOCAL_REDIS
    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        pytest.fail(f"no Redis at {url} ({exc}): start one, or set REDIS_URL", pytrace=False)
    return {"REDIS_URL": url, "SWITCHBOARD_CHANNEL_PREFIX": f"sb-test-{secrets.token_hex(6)}"}


@pytest.fixture(scope="session")
def redis_servers(
    daphne_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, LiveServer]]:
    """Two daphne processes sharing the test database, a SECRET_KEY and a Redis channel layer."""
    servers = start_servers(daphne_env, tmp_path_factory.mktemp("live-redis"), 2, **redis_env())
    try:
        yield servers[0], servers[1]
    finally:
        stop_servers(servers)


@pytest.fixture(scope="session")
def live_servers(
    live_daphne: LiveServer, daphne_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, LiveServer]]:
    """``live_daphne`` and a second process sharing its database and SECRET_KEY."""
    server = _start(daphne_env, tmp_path_factory.mktemp("live") / "b.log")
    try:
        _wait_ready(server)
        yield live_daphne, server
    finally:
        _stop(server)


def run[T](coro: Coroutine[Any, Any, T]) -> T:
    """Run the async client side of a test (the DB side stays in the sync test thread)."""
    return asyncio.run(coro)


@asynccontextmanager
async def mcp_client(url: str, key: str, mode: str) -> AsyncIterator[Client]:
    """The official SDK client over Streamable HTTP with the endpoint's bearer key."""
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client
