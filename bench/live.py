"""Benchmark the Board's live updates: from a transition's commit to its fragment arriving over
a WebSocket (a benchmark, not a test).

Run it alone: ``.venv/bin/python bench/live.py`` (``--quick`` for a smoke run). It uses
``DATABASE_URL`` (else the embedded server, through settings) and a Redis (``REDIS_URL``, else
the local one at 127.0.0.1:6379) under a channel prefix of the run's own. It touches no one
else's rows: it keeps a ``bench-live`` human and endpoint between runs, and deletes the todo
it watches when it ends.

It starts its own server, ``manage.py serve --no-seed --no-sweeper`` (daphne, as ``make run``
serves the product) on the same database and Redis, logs in as the bench's human through the
login form, opens the todo's trail page there and connects the WebSocket the page names, as
a browser would. Then, one at a time, this process runs ``--transitions`` transitions on that
todo through ``todos.lifecycle`` (notes over heartbeats, and every 20th transition a release
and a claim, so each attempt stays under its note cap) and times each from the moment the
transition returned (committed) to the moment its fragment arrived: the statement's NOTIFY, the
server's change feed and relay (switchboard/lib/changefeed.py), the server's socket re-reading
the trail and rendering it, the frame. That is the path of a deployment with several processes
(a sweeper, another web process): the change reaches the server from the database, not
through Redis.

Each push carries the live container whole (everything since the page's first paint), so later
pushes are larger; it prints the median and 95th percentile of the latency against the budget
(p95 at most 500 ms), the first and last thirds' medians, and the last push's size.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import logging
import os
import re
import secrets
import signal
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "switchboard.settings")
LOCAL_REDIS = "redis://127.0.0.1:6379/0"
# This process and the server share one Redis layer under a prefix of this run's own; set
# before the settings are read.
os.environ["REDIS_URL"] = os.environ.get("REDIS_URL") or LOCAL_REDIS
os.environ["SWITCHBOARD_CHANNEL_PREFIX"] = f"bench-live-{secrets.token_hex(6)}"

# The project's modules need settings configured first, hence the imports after setup().
import django  # noqa: E402

django.setup()

# The settings log INFO to the console; httpx2 logs every request at INFO.
logging.getLogger("httpx2").setLevel(logging.WARNING)

import httpx2  # noqa: E402
import redis  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from websockets.asyncio.client import ClientConnection, connect  # noqa: E402

from activity import live  # noqa: E402
from bench.devserver import DevServer  # noqa: E402
from switchboard import credentials, embedded  # noqa: E402
from switchboard.models import Endpoint, Human  # noqa: E402
from todos import lifecycle  # noqa: E402

USERNAME = "bench-live"
SLUG = "bench-live"
OWNER = "bench/live"
QUEUE = "bench-live"
ARRIVAL_TIMEOUT_SECONDS = 10.0
BUDGET_P95_MS = 500.0
WARMUP = 5
CYCLE = 20  # transitions per attempt: notes, then a release and a claim


# --- the server -------------------------------------------------------------------------------


def _sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through main's finally, which stops the server


# --- the bench's human, endpoint and todo -------------------------------------------------------


def ensure_human() -> tuple[Human, Endpoint, str]:
    """The bench's human (a fresh password each run) and endpoint, kept between runs."""
    password = secrets.token_urlsafe(18)
    human = Human.objects.filter(username=USERNAME).first()
    if human is None:
        human = Human.objects.create_user(USERNAME, password=password)
    else:
        human.set_password(password)
        human.is_active = True
        human.save(update_fields=["password", "is_active"])
    endpoint = Endpoint.objects.filter(slug=SLUG).first()
    if endpoint is None:
        endpoint, _, _ = credentials.create_endpoint(
            human, name="Live benchmark agent", slug=SLUG, verbs=["claim", "heartbeat"]
        )
    return human, endpoint, password


def transitions(endpoint: Endpoint, todo_id: str) -> Callable[[int], None]:
    """The i-th transition: a note, or at the end of each CYCLE a release, then a claim."""

    def run(i: int) -> None:
        step = i % CYCLE
        if step == CYCLE - 2:
            lifecycle.release(endpoint.id, todo_id, owner=OWNER)
        elif step == CYCLE - 1:
            lifecycle.claim(endpoint.id, todo_id, owner=OWNER, lease_ttl_seconds=3600)
        else:
            lifecycle.heartbeat(endpoint.id, todo_id, owner=OWNER, note=f"bench note {i}")

    return run


# --- the clients ---------------------------------------------------------------------------------


async def open_page(server: DevServer, password: str, todo_id: str) -> tuple[str, str]:
    """Log in and open the trail page; the socket URL it names, and the session's cookies."""
    async with httpx2.AsyncClient(timeout=30) as http:
        form = await http.get(f"{server.base}/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
        assert token is not None, "no login form"
        done = await http.post(
            f"{server.base}/login/",
            data={"username": USERNAME, "password": password, "csrfmiddlewaretoken": token[1]},
            headers={"Referer": f"{server.base}/login/"},
        )
        assert done.status_code == 302, f"login failed ({done.status_code})"
        page = await http.get(f"{server.base}/todos/{todo_id}")
        found = re.search(r'ws-connect="([^"]*)"', page.text)
        assert found is not None, "the trail page opens no socket"
        cookies = "; ".join(f"{name}={value}" for name, value in http.cookies.items())
        return f"ws://127.0.0.1:{server.port}{html.unescape(found[1])}", cookies


async def timed(
    ws: ClientConnection, transition: Callable[[int], None], i: int
) -> tuple[float, int]:
    """Run transition ``i`` in a worker thread; milliseconds from its return to the next
    frame's arrival, and that frame's size."""
    returned: list[float] = []

    def run() -> None:
        try:
            transition(i)
            returned.append(time.perf_counter())
        finally:
            connection.close()

    worker = asyncio.create_task(asyncio.to_thread(run))
    try:
        frame = await asyncio.wait_for(ws.recv(), ARRIVAL_TIMEOUT_SECONDS)
    except TimeoutError:
        if worker.done() and worker.exception() is not None:
            raise RuntimeError(f"transition {i} failed") from worker.exception()
        raise RuntimeError(f"transition {i}: no push within {ARRIVAL_TIMEOUT_SECONDS} s") from None
    arrived = time.perf_counter()
    await worker
    return (arrived - returned[0]) * 1000, len(frame)


async def measure(
    url: str, cookies: str, origin: str, transition: Callable[[int], None], n: int
) -> tuple[list[float], int]:
    async with connect(url, origin=origin, additional_headers={"Cookie": cookies}) as ws:
        await asyncio.wait_for(ws.recv(), ARRIVAL_TIMEOUT_SECONDS)  # the container, on connect
        for i in range(WARMUP):
            await timed(ws, transition, i)
        latencies, size = [], 0
        for i in range(WARMUP, WARMUP + n):
            ms, size = await timed(ws, transition, i)
            latencies.append(ms)
        return latencies, size


# --- report -----------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(latencies: list[float], size: int) -> bool:
    p50, p95 = statistics.median(latencies), percentile(latencies, 0.95)
    third = max(1, len(latencies) // 3)
    met = p95 <= BUDGET_P95_MS
    print(f"{len(latencies)} transitions, one at a time; commit → fragment over the socket:")
    print(f"  p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   max {max(latencies):7.1f} ms")
    print(
        f"  first third p50 {statistics.median(latencies[:third]):.1f} ms,"
        f" last third p50 {statistics.median(latencies[-third:]):.1f} ms;"
        f" last push {size / 1024:.1f} KiB"
    )
    print(f"budget: p95 <= {BUDGET_P95_MS:.0f} ms: {'met' if met else 'NOT MET'}")
    return met


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--transitions", type=int, default=200, help="transitions timed (200)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 20 transitions")
    args = parser.parse_args(argv)
    if args.quick:
        args.transitions = 20
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _sigterm)
    embedded.ensure_running()  # DATABASE_URL unset: settings only describe the server
    url = os.environ["REDIS_URL"]
    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        print(f"no Redis at {url} ({exc}): start one, or set REDIS_URL", file=sys.stderr)
        return 2
    prefix = settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"]
    print(f"bench/live.py  Redis {url}, channel prefix {prefix}")
    _, endpoint, password = ensure_human()
    # Every CYCLE transitions spend an attempt (a release and a claim): the budget must outlast
    # the run, or the release of the fifth attempt (the default budget) dead-letters the todo
    # and the next claim fails, which read as a push that never came.
    attempts = (WARMUP + args.transitions) // CYCLE + 2
    todo = lifecycle.create(
        endpoint.id, queue=QUEUE, title="bench: watched live", max_attempts=attempts
    )
    lifecycle.claim(endpoint.id, todo.id, owner=OWNER, lease_ttl_seconds=3600)
    server = DevServer("live", str(settings.DATABASE_URL))
    try:
        server.wait_ready()
        page_url, cookies = asyncio.run(open_page(server, password, todo.id))
        latencies, size = asyncio.run(
            measure(
                page_url, cookies, server.base, transitions(endpoint, todo.id), args.transitions
            )
        )
    finally:
        server.stop()
        live.flush()
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM todos WHERE id = %s", [todo.id])
    return 0 if report(latencies, size) else 1


if __name__ == "__main__":
    sys.exit(main())
