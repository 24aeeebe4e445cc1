"""Benchmark the MCP surface against the lifecycle it wraps (a benchmark, not a test).

Run it alone: ``.venv/bin/python bench/mcp.py`` (``--quick`` for a smoke run). It uses
``DATABASE_URL`` (else the embedded server, through settings) and TRUNCATEs ``todos`` there, so
point it at a database of its own, e.g. ``postgres://postgres@127.0.0.1:5432/sb_benchmcp``.

It starts its own server, ``manage.py serve --no-seed --no-sweeper --port <free port>`` (daphne,
as ``make run`` serves the product) with the same ``DATABASE_URL``, waits for ``/healthz``, and
stops it on exit, Ctrl-C included. Then, ``--rounds`` times, with the order rotated each round so
that drift and the neighbours' load fall on all variants alike, each for ``--seconds`` on
``--todos`` freshly seeded pending todos after ``--history`` completed ones (the settled
endpoint ``bench/lifecycle.py`` measures on, from ``bench/seeding.py``):

- ``direct``: claim_next + complete through ``todos.lifecycle`` on ``--clients`` threads in this
  process (Django's connections, the product's settings), the owner an MCP claim records;
- ``mcp 2026-07-28`` and ``mcp legacy``: the same cycle as ``tools/call claim_next`` and
  ``tools/call complete`` over HTTP, ``--clients`` official SDK clients (``mcp.Client`` on
  ``streamable_http_client`` with an ``httpx2`` client carrying the endpoint's bearer key),
  concurrent on one event loop in this process; ``mode="2026-07-28"`` is the stateless era,
  ``mode="legacy"`` the initialize handshake and its session;
- ``mcp wire``: the same 2026-07-28 requests the SDK client sends (stateless POSTs, the same
  headers and ``_meta``), from ``--clients`` light clients (``bench/mcpwire.py``: the standard
  library's ``http.client``, no pydantic, no output-schema validation), each a process of its
  own. On two cores the SDK clients' CPU (about as much as the server's) comes out of the
  server's share; with light clients the figure is the server's throughput.

It prints cycles/s (median over rounds), CPU per cycle (the clients: this process, the wire
clients' own processes, and for ``direct`` the product itself; daphne: the server process;
PostgreSQL: the database's backends when the server is local), the clients' median latency per
call, and each MCP variant's throughput as a fraction of direct (median of per-round ratios):
the SDK clients' ratio is what an agent on the same small machine would see, the wire clients'
is the server's. ``--profile-server FILE`` runs the server under cProfile (its event-loop thread
only: tools run in worker threads) and writes the profile on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import logging
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# This file is named mcp.py: run as a script, its directory heads sys.path and would shadow the
# SDK's ``mcp`` package. Drop it, and put the project root there instead.
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != HERE]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "switchboard.settings")

# The project's modules need settings configured first, hence the imports after setup().
import django  # noqa: E402

django.setup()

# The settings log INFO to the console; httpx2 logs every request at INFO, which would cost the
# clients CPU inside the measurement and bury the table.
for _name in ("httpx2", "httpx", "mcp"):
    logging.getLogger(_name).setLevel(logging.WARNING)

import httpx2  # noqa: E402
import psycopg  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connections  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from bench import seeding  # noqa: E402
from bench.devserver import DevServer  # noqa: E402
from mcp_server.verbs import owner_of  # noqa: E402
from switchboard import credentials, embedded, runtime_settings  # noqa: E402
from switchboard.models import Endpoint, EndpointKey, Human  # noqa: E402
from todos import lifecycle  # noqa: E402

QUEUE = "bench"
SLUG = "bench-mcp"
TTL_SECONDS = 300
CLAIMANT = "bench/mcp"
RESULT = {"ok": True, "checks": ["lint", "unit"], "duration_ms": 5123}
SUMMARY = "fixed the flaky check; reran the suite twice, green both times"
WARMUP_CYCLES = 10  # per client: connections, prepared statements, the SDK's tool listing
MODES = ("2026-07-28", "legacy")
DIRECT = "direct"
WIRE = "mcp wire"

BACKENDS = """
SELECT pid FROM pg_stat_activity
 WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
"""


# --- the server -------------------------------------------------------------------------------


def _sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through main's finally, which stops the server


# --- the database -----------------------------------------------------------------------------


def ensure_endpoint() -> tuple[Endpoint, str]:
    """The benchmark's endpoint (kept between runs) and a fresh key (the old ones revoked)."""
    human, _ = Human.objects.get_or_create(username="bench", defaults={"is_active": False})
    endpoint = Endpoint.objects.filter(slug=SLUG).first()
    if endpoint is None:
        endpoint, _, plaintext = credentials.create_endpoint(
            human, name="MCP benchmark agent", slug=SLUG, verbs=["claim_next", "complete"]
        )
        return endpoint, plaintext
    credentials.revoke_keys(EndpointKey.objects.filter(endpoint=endpoint))
    _, plaintext = credentials.mint_key(endpoint)
    return endpoint, plaintext


def server_is_local(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("", "localhost", "127.0.0.1", "::1") or host.startswith("/")


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU of a local process (all its threads), from /proc; None if unreadable."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class PgCpu:
    """CPU of this database's backends between two snapshots (local servers only). Backends
    born in between count in full; one that exits in between is lost (rare: CONN_MAX_AGE 60)."""

    def __init__(self, admin: psycopg.Connection[Any], enabled: bool) -> None:
        self.admin = admin
        self.enabled = enabled

    def snapshot(self) -> dict[int, float] | None:
        if not self.enabled:
            return None
        got = {}
        for (pid,) in self.admin.execute(BACKENDS).fetchall():
            cpu = _cpu_seconds(int(pid))
            if cpu is not None:
                got[int(pid)] = cpu
        return got

    @staticmethod
    def between(a: dict[int, float] | None, b: dict[int, float] | None) -> float | None:
        if a is None or b is None:
            return None
        return sum(cpu - a.get(pid, 0.0) for pid, cpu in b.items())


# --- measurements -----------------------------------------------------------------------------


@dataclass(slots=True)
class Sample:
    key: str
    round: int
    cycles: int
    seconds: float
    client_cpu: float
    server_cpu: float | None
    pg_cpu: float | None
    exhausted: bool
    claim_ms: list[float] = field(default_factory=list)
    complete_ms: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.cycles / self.seconds if self.seconds > 0 else 0.0


@dataclass(slots=True)
class Tally:
    """One client's (or thread's) count, filled in by the client itself."""

    cycles: int = 0
    end: float = 0.0
    exhausted: bool = False
    error: BaseException | None = None
    claim_ms: list[float] = field(default_factory=list)
    complete_ms: list[float] = field(default_factory=list)


@dataclass(slots=True)
class Meters:
    """What a measurement reads around its window: this process, daphne, PostgreSQL."""

    server_pid: int
    pg: PgCpu
    client0: float = 0.0
    server0: float | None = None
    pg0: dict[int, float] | None = None

    def start(self) -> None:
        self.pg0 = self.pg.snapshot()
        self.server0 = _cpu_seconds(self.server_pid)
        self.client0 = time.process_time()

    def sample(
        self,
        key: str,
        round_no: int,
        tallies: Sequence[Tally],
        start: float,
        client_cpu: float | None = None,
    ) -> Sample:
        """The window's figures; ``client_cpu`` for clients outside this process."""
        client = time.process_time() - self.client0 if client_cpu is None else client_cpu
        server1 = _cpu_seconds(self.server_pid)
        pg = PgCpu.between(self.pg0, self.pg.snapshot())
        server = None if self.server0 is None or server1 is None else server1 - self.server0
        if key == DIRECT:
            server = None  # daphne idles through the direct variant
        return Sample(
            key=key,
            round=round_no,
            cycles=sum(t.cycles for t in tallies),
            seconds=max(t.end for t in tallies) - start,
            client_cpu=client,
            server_cpu=server,
            pg_cpu=pg,
            exhausted=any(t.exhausted for t in tallies),
            claim_ms=[ms for t in tallies for ms in t.claim_ms],
            complete_ms=[ms for t in tallies for ms in t.complete_ms],
        )


def _direct_worker(
    endpoint_id: uuid.UUID,
    owner: str,
    index: int,
    ready: threading.Barrier,
    go: threading.Event,
    deadline: list[float],
    tally: Tally,
    done: threading.Barrier,
    release: threading.Event,
) -> None:
    claimant = f"{CLAIMANT}/direct-{index}"

    def cycle(timed: bool) -> bool:
        t0 = time.perf_counter()
        claimed = lifecycle.claim_next(
            endpoint_id, [QUEUE], owner=owner, lease_ttl_seconds=TTL_SECONDS, claimant=claimant
        )
        t1 = time.perf_counter()
        if claimed is None:
            return False
        lifecycle.complete(
            endpoint_id, claimed.todo.id, owner=owner, result=RESULT, summary=SUMMARY
        )
        if timed:
            tally.claim_ms.append((t1 - t0) * 1e3)
            tally.complete_ms.append((time.perf_counter() - t1) * 1e3)
        return True

    try:
        for _ in range(WARMUP_CYCLES):
            cycle(timed=False)
        ready.wait()
        go.wait()
        while time.monotonic() < deadline[0]:
            if not cycle(timed=True):
                tally.exhausted = True
                break
            tally.cycles += 1
        tally.end = time.monotonic()
        done.wait()
        release.wait()  # keep the connection (and its backend's CPU figure) until sampled
    except threading.BrokenBarrierError:
        pass
    except BaseException as exc:
        tally.error = exc
        ready.abort()
        done.abort()
    finally:
        tally.end = tally.end or time.monotonic()
        connections.close_all()


def measure_direct(
    endpoint: Endpoint, clients: int, seconds: float, round_no: int, meters: Meters
) -> Sample:
    tallies = [Tally() for _ in range(clients)]
    ready = threading.Barrier(clients + 1)
    done = threading.Barrier(clients + 1)
    release = threading.Event()
    go = threading.Event()
    deadline = [0.0]
    owner = owner_of(endpoint)
    pool = [
        threading.Thread(
            target=_direct_worker,
            args=(endpoint.id, owner, i, ready, go, deadline, tallies[i], done, release),
        )
        for i in range(clients)
    ]
    for t in pool:
        t.start()
    start = 0.0
    sample: Sample | None = None
    try:
        ready.wait()
        meters.start()
        start = time.monotonic()
        deadline[0] = start + seconds
        go.set()
        done.wait()
        sample = meters.sample(DIRECT, round_no, tallies, start)
    except threading.BrokenBarrierError:
        pass
    finally:
        deadline[0] = 0.0  # on an interruption, stop the threads after their current cycle
        go.set()
        done.abort()
        release.set()
        for t in pool:
            t.join()
    for i, tally in enumerate(tallies):
        if tally.error is not None:
            raise RuntimeError(f"direct thread {i} failed") from tally.error
    assert sample is not None
    return sample


def _structured(result: Any, tool: str) -> dict[str, Any]:
    if result.is_error or not isinstance(result.structured_content, dict):
        raise RuntimeError(f"{tool}: {result.content!r}")
    out: dict[str, Any] = result.structured_content
    return out


async def _mcp_client(
    url: str,
    key: str,
    mode: str,
    index: int,
    ready: asyncio.Barrier,
    go: asyncio.Event,
    deadline: list[float],
    tally: Tally,
) -> None:
    claimant = f"{CLAIMANT}/{mode}-{index}"
    claim_args = {"queue": QUEUE, "lease_ttl_seconds": TTL_SECONDS, "claimant": claimant}
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):

        async def cycle(timed: bool) -> bool:
            t0 = time.perf_counter()
            claimed = _structured(await client.call_tool("claim_next", claim_args), "claim_next")
            t1 = time.perf_counter()
            if claimed.get("empty"):
                return False
            done = await client.call_tool(
                "complete", {"id": claimed["todo"]["id"], "result": RESULT, "summary": SUMMARY}
            )
            _structured(done, "complete")
            if timed:
                tally.claim_ms.append((t1 - t0) * 1e3)
                tally.complete_ms.append((time.perf_counter() - t1) * 1e3)
            return True

        try:
            for _ in range(WARMUP_CYCLES):
                await cycle(timed=False)
            await ready.wait()
            await go.wait()
            while time.monotonic() < deadline[0]:
                if not await cycle(timed=True):
                    tally.exhausted = True
                    break
                tally.cycles += 1
        finally:
            tally.end = time.monotonic()


async def _measure_mcp(
    url: str, key: str, mode: str, clients: int, seconds: float, round_no: int, meters: Meters
) -> Sample:
    tallies = [Tally() for _ in range(clients)]
    ready = asyncio.Barrier(clients + 1)
    go = asyncio.Event()
    deadline = [0.0]
    tasks = [
        asyncio.create_task(_mcp_client(url, key, mode, i, ready, go, deadline, tallies[i]))
        for i in range(clients)
    ]
    waiter = asyncio.create_task(ready.wait())
    try:
        done, _ = await asyncio.wait({waiter, *tasks}, return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:  # a client ended (failed) before it was ready
            next(t for t in done if t is not waiter).result()
            raise RuntimeError("an MCP client ended before the start")
        meters.start()
        start = time.monotonic()
        deadline[0] = start + seconds
        go.set()
        await asyncio.gather(*tasks)
    finally:
        waiter.cancel()
        for t in tasks:
            t.cancel()
        await asyncio.gather(waiter, *tasks, return_exceptions=True)
    return meters.sample(f"mcp {mode}", round_no, tallies, start)


def measure_mcp(
    url: str, key: str, mode: str, clients: int, seconds: float, round_no: int, meters: Meters
) -> Sample:
    return asyncio.run(_measure_mcp(url, key, mode, clients, seconds, round_no, meters))


def measure_wire(
    url: str, key: str, clients: int, seconds: float, round_no: int, meters: Meters
) -> Sample:
    """``--clients`` light clients (``bench/mcpwire.py``), one process each."""
    command = [
        sys.executable,
        str(HERE / "mcpwire.py"),
        *("--url", url, "--queue", QUEUE, "--ttl", str(TTL_SECONDS)),
        *("--result", json.dumps(RESULT), "--summary", SUMMARY),
        *("--warmup", str(WARMUP_CYCLES)),
    ]
    env = {**os.environ, "MCPWIRE_KEY": key}
    procs = [
        subprocess.Popen(  # noqa: S603 (our own command line)
            [*command, "--claimant", f"{CLAIMANT}/wire-{i}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        for i in range(clients)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = json.loads(proc.stdout.readline() or "{}")
            if not line.get("ready"):
                raise RuntimeError(f"a wire client failed to start: {line.get('error', line)}")
        meters.start()
        start = time.monotonic()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"deadline": start + seconds}) + "\n")
            proc.stdin.flush()
        tallies, cpu = [], 0.0
        for proc in procs:
            assert proc.stdout is not None
            got = json.loads(proc.stdout.readline() or "{}")
            if "cycles" not in got:
                raise RuntimeError(f"a wire client failed: {got.get('error', got)}")
            tallies.append(
                Tally(
                    cycles=got["cycles"],
                    end=got["end"],
                    exhausted=got["exhausted"],
                    claim_ms=got["claim_ms"],
                    complete_ms=got["complete_ms"],
                )
            )
            cpu += got["cpu"]
        return meters.sample(WIRE, round_no, tallies, start, client_cpu=cpu)
    finally:
        # A client still waiting for its deadline (another failed) reads end of file and exits.
        for proc in procs:
            if proc.stdin is not None:
                proc.stdin.close()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


# --- report -----------------------------------------------------------------------------------


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def paired_ratio(samples: Sequence[Sample], key: str) -> float | None:
    """Median over rounds of rate(key)/rate(direct), each pair measured in the same round."""
    bases = {s.round: s.rate for s in samples if s.key == DIRECT and s.rate}
    return _median([s.rate / bases[s.round] for s in samples if s.key == key and s.round in bases])


def print_header(admin: psycopg.Connection[Any], args: argparse.Namespace, local: bool) -> None:
    row = admin.execute("SELECT current_setting('server_version')").fetchone()
    sync = admin.execute("SHOW synchronous_commit").fetchone()
    load1, load5, _ = os.getloadavg()
    print(f"bench/mcp.py  {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    print(
        f"PostgreSQL {row[0] if row else '?'} ({'local' if local else 'remote'}),"
        f" synchronous_commit={sync[0] if sync else '?'}; Python {sys.version.split()[0]},"
        f" Django {django.get_version()}, mcp {version('mcp')}, daphne {version('daphne')},"
        f" httpx2 {version('httpx2')}; {os.cpu_count()} CPUs, load {load1:.2f}/{load5:.2f}"
    )
    print(
        f"{args.todos} pending todos (after {args.history} completed) per measurement,"
        f" {args.seconds:g} s each,"
        f" {args.rounds} round(s), {args.clients} clients (threads for direct)"
    )


def print_table(samples: Sequence[Sample], keys: Sequence[str]) -> None:
    print()
    print("claim_next + complete: medians over rounds; CPU per cycle; latency per call")
    print(
        f"{'variant':<16}{'cycles/s':>9}{'range':>13}{'vs direct':>11}"
        f"{'client µs':>11}{'daphne µs':>11}{'PG µs':>8}{'claim ms':>10}{'compl. ms':>11}"
    )
    for key in keys:
        got = [s for s in samples if s.key == key]
        if not got:
            continue
        rates = [s.rate for s in got]
        ratio = paired_ratio(samples, key) if key != DIRECT else None
        with_ops = [s for s in got if s.cycles]
        client = _median([s.client_cpu / s.cycles * 1e6 for s in with_ops])
        server = _median(
            [s.server_cpu / s.cycles * 1e6 for s in with_ops if s.server_cpu is not None]
        )
        pg = _median([s.pg_cpu / s.cycles * 1e6 for s in with_ops if s.pg_cpu is not None])
        claim = _median([ms for s in got for ms in s.claim_ms])
        complete = _median([ms for s in got for ms in s.complete_ms])
        line = (
            f"{key:<16}{_median(rates) or 0:>9.0f}{f'{min(rates):.0f}-{max(rates):.0f}':>13}"
            f"{'' if ratio is None else f'{ratio * 100:.1f} %':>11}"
            f"{_fmt(client, '.0f'):>11}{_fmt(server, '.0f'):>11}{_fmt(pg, '.0f'):>8}"
            f"{_fmt(claim, '.2f'):>10}{_fmt(complete, '.2f'):>11}"
        )
        if any(s.exhausted for s in got):
            line += "  (ran out of todos: raise --todos)"
        print(line)
    print()
    print("client µs: the clients' CPU (for direct, the product itself; for mcp 2026-07-28 and")
    print("legacy, the SDK clients in this process; for mcp wire, the light clients' processes);")
    print("daphne µs: the server process; PG µs: this database's backends.")
    print()
    print("MCP throughput as a fraction of direct (median of per-round ratios):")
    for key in keys:
        if key == DIRECT:
            continue
        ratio = paired_ratio(samples, key)
        if ratio is not None:
            what = "the server's (light clients)" if key == WIRE else "with the SDK clients"
            print(
                f"  {key:<16}{ratio:6.3f}  ({ratio * 100:.1f} %, {1 / ratio:.1f}x slower)  {what}"
            )


# --- main -------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=5.0, help="per measurement (5)")
    parser.add_argument("--clients", type=int, default=4, help="MCP clients, direct threads (4)")
    parser.add_argument("--rounds", type=int, default=3, help="repetitions, rotated (3)")
    parser.add_argument("--todos", type=int, default=20_000, help="pending todos seeded (20000)")
    parser.add_argument(
        "--history", type=int, default=10_000, help="completed todos seeded first (10000)"
    )
    parser.add_argument(
        "--only", default="", help="comma-separated: direct, 2026-07-28, legacy, wire"
    )
    parser.add_argument(
        "--profile-server", type=Path, default=None, help="cProfile the server into this file"
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 s, 1 round, 5000 todos")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.rounds, args.todos = 1.0, 1, 5_000
    if args.clients < 1 or args.rounds < 1:
        parser.error("--clients and --rounds must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    wanted = {w.strip() for w in args.only.split(",") if w.strip()}
    keys = [
        k
        for k in (DIRECT, *(f"mcp {m}" for m in MODES), WIRE)
        if not wanted or k in wanted or k.removeprefix("mcp ") in wanted
    ]
    embedded.ensure_running()  # DATABASE_URL unset: settings only describe the server
    url = str(settings.DATABASE_URL)
    local = server_is_local(url)
    endpoint, key = ensure_endpoint()
    # The MCP rate limits (runtime settings) would cap the very throughput measured here.
    runtime_settings.put("mcp_rate_per_address", 0)
    runtime_settings.put("mcp_rate_per_endpoint", 0)
    # Ctrl-C raises KeyboardInterrupt even when started with SIGINT ignored (a background job),
    # and SIGTERM unwinds the same way: both reach the finally that stops the server.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _sigterm)
    samples: list[Sample] = []
    server = DevServer("mcp", url, profile=args.profile_server)
    try:
        with psycopg.connect(url, autocommit=True, application_name="switchboard-bench") as admin:
            print_header(admin, args, local)
            server.wait_ready()
            mcp_url = f"{server.base}/mcp/{SLUG}"
            meters = Meters(server.pid, PgCpu(admin, enabled=local))
            try:
                for round_no in range(args.rounds):
                    shift = round_no % len(keys)
                    for k in keys[shift:] + keys[:shift]:
                        seeding.seed(admin, endpoint.id, QUEUE, args.todos, args.history)
                        if k == DIRECT:
                            s = measure_direct(
                                endpoint, args.clients, args.seconds, round_no, meters
                            )
                        elif k == WIRE:
                            s = measure_wire(
                                mcp_url, key, args.clients, args.seconds, round_no, meters
                            )
                        else:
                            mode = k.removeprefix("mcp ")
                            s = measure_mcp(
                                mcp_url, key, mode, args.clients, args.seconds, round_no, meters
                            )
                        samples.append(s)
                        print(
                            f"  round {round_no + 1}/{args.rounds}  {k:<16}{s.rate:8.0f}/s",
                            file=sys.stderr,
                            flush=True,
                        )
            finally:
                admin.execute("TRUNCATE todos, todo_attempts CASCADE")
    except RuntimeError:
        print(f"server log (tail):\n{server.tail()}", file=sys.stderr)
        raise
    finally:
        server.stop()
    print_table(samples, keys)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted; the server was stopped", file=sys.stderr)
        sys.exit(130)
