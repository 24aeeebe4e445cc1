"""Benchmark the OTLP receiver: spans persisted per second, and what ingest costs the lifecycle.

Run it alone: ``.venv/bin/python bench/otlp.py`` (``--quick`` for a smoke run). It uses
``DATABASE_URL`` (else the embedded server, through settings) and TRUNCATEs ``todos`` there (the
spans go with them), so point it at a database of its own, e.g.
``postgres://postgres@127.0.0.1:5432/sb_benchotlp``. It lifts the OTLP rate limits and the span
caps in that database's runtime settings for the run.

It starts its own server, ``manage.py serve --no-seed --no-sweeper`` (daphne, as ``make run``
serves the product), waits for ``/healthz``, and stops it on exit. Then:

- **ingest**: for 1 and 4 clients (``--clients``), each client a thread with a keep-alive HTTP
  connection posting ``--batch``-span protobuf export requests (fresh span ids every time, bound
  by trace to the client's own claimed todo, five GenAI attributes a span), for ``--seconds``,
  ``--rounds`` times. A span counts once the server answered 200 without rejecting it: it was
  committed before the answer. Reported: spans/s (median over rounds), the server process's
  CPU per span (user + system, from /proc), PostgreSQL's CPU per span (its backends serving
  this database, from /proc when it runs on this machine: steadier than spans/s on a shared
  one), and the median request latency.
- **lifecycle under ingest**: claim_next + complete through ``todos.lifecycle`` on one thread in
  this process, for ``--seconds``, while 4 clients pour spans in (``--pour-rate`` spans/s, then
  flat out unless ``--paced-only``), each such run between two runs alone; reported as cycles/s
  and the slowdown against the mean of the two neighbours (``--skip-ingest`` runs only this).
  On a small machine the clients, the server and PostgreSQL share the same cores, so most of
  the slowdown is CPU contention, not locking: the cycle's todos are not the spans' todos.
  ``--ingest-only`` stops after the ingest.

A third of the spans are model calls with usage (priced by the price table: a
``claude-sonnet-4*`` row); the agent and tool spans carry the same usage attributes, refused
and counted: the ingest's usage extraction, pricing and rollup are in every batch
(docs/decisions/0036-cost-and-budgets.md).
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import statistics
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "switchboard.settings")

import django  # noqa: E402

django.setup()
for _name in ("httpx2", "httpx"):
    logging.getLogger(_name).setLevel(logging.WARNING)

import httpx2  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection, connections  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue  # noqa: E402
from opentelemetry.proto.resource.v1.resource_pb2 import Resource  # noqa: E402
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span  # noqa: E402

from bench.devserver import DevServer  # noqa: E402
from switchboard import credentials, runtime_settings  # noqa: E402
from switchboard.models import Endpoint, EndpointKey, Human, Setting  # noqa: E402
from todos import lifecycle  # noqa: E402

SLUG = "bench-otlp"
LOOP_QUEUE = "loop"
LIFTED = {
    "otlp_rate_per_address": 0,
    "otlp_rate_per_endpoint": 0,
    "spans_max_per_todo": 1_000_000,
    "spans_max_per_attempt": 1_000_000,
}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a local process (all its threads), from /proc."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _backends_cpu() -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL backend of this database but this process's own
    (the server's connections, its announcer, autovacuum), from /proc: the database's side of
    ingest, when PostgreSQL runs on this machine (empty otherwise)."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        pids = [row[0] for row in cur.fetchall()]
    out = {}
    for pid in pids:
        try:
            out[pid] = _cpu_seconds(pid)
        except OSError:  # not on this machine, or gone meanwhile
            continue
    return out


def otlp_url(server: DevServer) -> str:
    return f"{server.base}/otlp/{SLUG}/v1/traces"


def ensure_endpoint() -> tuple[Endpoint, str]:
    human, _ = Human.objects.get_or_create(username="bench", defaults={"is_active": False})
    endpoint = Endpoint.objects.filter(slug=SLUG).first()
    if endpoint is None:
        endpoint, _, plaintext = credentials.create_endpoint(
            human, name="OTLP benchmark agent", slug=SLUG, verbs=["claim_next", "complete"]
        )
        return endpoint, plaintext
    credentials.revoke_keys(EndpointKey.objects.filter(endpoint=endpoint))
    _, plaintext = credentials.mint_key(endpoint)
    return endpoint, plaintext


def claimed_trace(endpoint: Endpoint, queue: str) -> bytes:
    """A todo claimed on ``queue`` with a fresh trace id; returns that trace id."""
    trace = secrets.token_bytes(16)
    lifecycle.create(endpoint.id, queue=queue)
    assert lifecycle.claim_next(endpoint.id, [queue], owner="endpoint:bench", trace_id=trace)
    return trace


def template(trace: bytes, size: int) -> ExportTraceServiceRequest:
    """A batch shaped like an agent's: an agent span, LLM calls and tool calls."""
    now = time.time_ns()
    spans = []
    for i in range(size):
        kind = ("chat", "execute_tool", "invoke_agent")[i % 3]
        attributes = {
            "gen_ai.operation.name": kind,
            "gen_ai.request.model": "claude-sonnet-4",
            "gen_ai.usage.input_tokens": 1200 + i,
            "gen_ai.usage.output_tokens": 80,
            "gen_ai.tool.name": "read_file",
        }
        spans.append(
            Span(
                trace_id=trace,
                span_id=secrets.token_bytes(8),
                parent_span_id=secrets.token_bytes(8),
                name=f"{kind} step {i}",
                kind=Span.SPAN_KIND_INTERNAL,
                start_time_unix_nano=now + i * 1_000_000,
                end_time_unix_nano=now + i * 1_000_000 + 500_000,
                attributes=[
                    KeyValue(
                        key=k,
                        value=AnyValue(int_value=v)
                        if isinstance(v, int)
                        else AnyValue(string_value=v),
                    )
                    for k, v in attributes.items()
                ],
            )
        )
    service = KeyValue(key="service.name", value=AnyValue(string_value="bench-agent"))
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=[service]), scope_spans=[ScopeSpans(spans=spans)]
            )
        ]
    )


@dataclass(slots=True)
class Tally:
    spans: int = 0
    requests: int = 0
    rejected: int = 0
    latencies: list[float] = field(default_factory=list)
    error: BaseException | None = None


def client(
    url: str,
    key: str,
    trace: bytes,
    size: int,
    stop_at: float,
    tally: Tally,
    interval: float = 0.0,
) -> None:
    """Post batches until ``stop_at``, one every ``interval`` seconds at most (0: flat out)."""
    message = template(trace, size)
    spans = message.resource_spans[0].scope_spans[0].spans
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/x-protobuf"}
    try:
        with httpx2.Client(headers=headers, timeout=60) as http:
            next_at = time.monotonic()
            while time.monotonic() < stop_at:
                if interval:
                    time.sleep(max(0.0, next_at - time.monotonic()))
                    next_at += interval
                for span in spans:
                    span.span_id = secrets.token_bytes(8)
                body = message.SerializeToString()
                started = time.perf_counter()
                answer = http.post(url, content=body)
                tally.latencies.append(time.perf_counter() - started)
                if answer.status_code != 200:
                    raise RuntimeError(f"{answer.status_code}: {answer.content[:200]!r}")
                rejected = ExportTraceServiceResponse.FromString(
                    answer.content
                ).partial_success.rejected_spans
                tally.requests += 1
                tally.rejected += rejected
                tally.spans += size - rejected
    except BaseException as exc:
        tally.error = exc


def pour(
    server: DevServer,
    key: str,
    traces: list[bytes],
    size: int,
    seconds: float,
    interval: float = 0.0,
) -> tuple[list[Tally], float, float]:
    """Run one client per trace for ``seconds``; the tallies, the elapsed time, the server's CPU
    and PostgreSQL's (None when its backends are not on this machine)."""
    tallies = [Tally() for _ in traces]
    stop_at = time.monotonic() + seconds
    threads = [
        threading.Thread(
            target=client, args=(otlp_url(server), key, trace, size, stop_at, tally, interval)
        )
        for trace, tally in zip(traces, tallies, strict=True)
    ]
    pg0 = _backends_cpu()
    cpu0, t0 = _cpu_seconds(server.process.pid), time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed, cpu = time.monotonic() - t0, _cpu_seconds(server.process.pid) - cpu0
    pg1 = _backends_cpu()
    pg_cpu = sum(used - pg0.get(pid, 0.0) for pid, used in pg1.items()) if pg1 else None
    for tally in tallies:
        if tally.error is not None:
            raise RuntimeError(f"a client failed: {tally.error}\n{server.tail(2000)}")
    return tallies, elapsed, cpu, pg_cpu


def lifecycle_loop(endpoint: Endpoint, seconds: float, out: list[int]) -> None:
    """claim_next + complete on this process's own connection for ``seconds``."""
    try:
        done = 0
        stop_at = time.monotonic() + seconds
        while time.monotonic() < stop_at:
            claimed = lifecycle.claim_next(endpoint.id, [LOOP_QUEUE], owner="endpoint:loop")
            if claimed is None:
                raise RuntimeError("the loop ran out of todos: raise the seed")
            lifecycle.complete(
                endpoint.id, claimed.todo.id, owner="endpoint:loop", result={"ok": True}
            )
            done += 1
        out.append(done)
    finally:
        connections.close_all()


def seed_loop(endpoint: Endpoint, n: int) -> None:
    with connection.cursor() as cur:
        cur.execute(
            """INSERT INTO todos (id, endpoint_id, queue, title, created_at)
               SELECT 'td_' || substr(translate(md5(%s || ':' || i), '0189', 'wxyz'), 1, 20),
                      %s, %s, 'loop ' || i, now() - (%s - i) * interval '1 millisecond'
                 FROM generate_series(1, %s) AS i""",
            [uuid.uuid4().hex, endpoint.id, LOOP_QUEUE, n, n],
        )


def pourer_process(argv: list[str]) -> int:
    """``--pour URL KEY TRACES SECONDS BATCH RATE``: the clients in a process of their own, so
    they do not share the lifecycle loop's interpreter lock; prints the spans stored."""
    url, key, traces, seconds, size, rate = argv
    trace_list = [bytes.fromhex(t) for t in traces.split(",")]
    interval = int(size) * len(trace_list) / float(rate) if float(rate) else 0.0
    tallies = [Tally() for _ in trace_list]
    stop_at = time.monotonic() + float(seconds)
    threads = [
        threading.Thread(target=client, args=(url, key, trace, int(size), stop_at, tally, interval))
        for trace, tally in zip(trace_list, tallies, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for tally in tallies:
        if tally.error is not None:
            raise tally.error
    print(sum(t.spans for t in tallies))
    return 0


def pour_beside_loop(
    server: DevServer,
    key: str,
    traces: list[bytes],
    args: argparse.Namespace,
    endpoint: Endpoint,
    rate: float,
) -> tuple[float, float]:
    """Spans/s poured by a separate client process and claim+complete/s meanwhile."""
    pourer = subprocess.Popen(  # noqa: S603 (our own command line)
        [
            sys.executable,
            __file__,
            "--pour",
            otlp_url(server),
            key,
            ",".join(t.hex() for t in traces),
            str(args.seconds + 1),
            str(args.batch),
            str(rate),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.5)  # the clients are connected and pouring before the loop starts
    under: list[int] = []
    lifecycle_loop(endpoint, args.seconds, under)
    out, _ = pourer.communicate(timeout=120)
    if pourer.returncode != 0:
        raise RuntimeError(f"the pouring clients failed:\n{server.tail(2000)}")
    return int(out.strip().splitlines()[-1]) / (args.seconds + 1), under[0] / args.seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 s per measurement")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=100, help="spans per export request")
    parser.add_argument("--clients", default="1,4", help="client counts, comma-separated")
    parser.add_argument(
        "--pour-rate",
        type=float,
        default=1000.0,
        help="spans/s the 4 clients pour beside the lifecycle loop (paced); then flat out",
    )
    parser.add_argument(
        "--paced-only", action="store_true", help="skip the flat-out pour beside the loop"
    )
    parser.add_argument(
        "--skip-ingest", action="store_true", help="only the lifecycle beside ingest"
    )
    parser.add_argument(
        "--ingest-only", action="store_true", help="only the ingest, not the lifecycle beside it"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.rounds = 1.0, 1
    counts = [int(c) for c in args.clients.split(",")]

    database_url = settings.DATABASES["default"].get("NAME")
    server = DevServer("otlp", os.environ.get("DATABASE_URL", ""), env={"SWITCHBOARD_OTLP": "1"})
    try:
        server.wait_ready()
        with connection.cursor() as cur:
            cur.execute("TRUNCATE todos, todo_attempts CASCADE")
        for key, value in LIFTED.items():
            runtime_settings.put(key, value)
        endpoint, key = ensure_endpoint()
        print(
            f"database {database_url}; {args.batch}-span protobuf batches; "
            f"{args.seconds:g} s x {args.rounds} rounds"
        )
        print(
            f"{'clients':>7}  {'spans/s':>9}  {'server CPU/span':>15}  {'PG CPU/span':>15}"
            f"  {'p50 request':>11}"
        )
        for n in [] if args.skip_ingest else counts:
            rates, cpus, pg_cpus, p50s = [], [], [], []
            for _round in range(args.rounds + 1):  # the first round warms up, uncounted
                traces = [claimed_trace(endpoint, f"ingest-{n}-{i}") for i in range(n)]
                tallies, elapsed, cpu, pg_cpu = pour(server, key, traces, args.batch, args.seconds)
                spans = sum(t.spans for t in tallies)
                if _round == 0:
                    continue
                rates.append(spans / elapsed)
                cpus.append(cpu / max(spans, 1) * 1000)
                if pg_cpu is not None:
                    pg_cpus.append(pg_cpu / max(spans, 1) * 1000)
                p50s.append(statistics.median(x for t in tallies for x in t.latencies) * 1000)
            pg = f"{statistics.median(pg_cpus):>12.3f} ms" if pg_cpus else f"{'-':>15}"
            print(
                f"{n:>7}  {statistics.median(rates):>9,.0f}  "
                f"{statistics.median(cpus):>12.3f} ms  {pg}  {statistics.median(p50s):>8.1f} ms"
            )

        if args.ingest_only:
            return 0
        seed_loop(endpoint, 200_000 if not args.quick else 5_000)
        # Each poured run is bracketed by two runs alone (alone, poured, alone), and the
        # slowdown is the poured rate against the mean of its two neighbours: drift in the
        # machine's speed (neighbours' load, autovacuum after a pour, the queue's head moving)
        # falls on both sides alike. The verdict is the median of the per-round ratios.
        alone_rates: list[float] = []
        poured: dict[str, list[float]] = {"paced": [], "flat out": []}
        slower: dict[str, list[float]] = {"paced": [], "flat out": []}

        def alone_rate() -> float:
            alone: list[int] = []
            lifecycle_loop(endpoint, args.seconds, alone)
            alone_rates.append(alone[0] / args.seconds)
            return alone_rates[-1]

        before = alone_rate()
        for round_no in range(args.rounds):
            for label, rate in (("paced", args.pour_rate), ("flat out", 0)):
                if label == "flat out" and args.paced_only:
                    continue
                traces = [claimed_trace(endpoint, f"pour-{round_no}-{label}-{i}") for i in range(4)]
                spans_per_s, under = pour_beside_loop(server, key, traces, args, endpoint, rate)
                after = alone_rate()
                poured[label].append(spans_per_s)
                slower[label].append((1 - under / ((before + after) / 2)) * 100)
                before = after
        print(f"claim+complete alone (one thread): {statistics.median(alone_rates):,.0f}/s")
        for label in ("paced", "flat out"):
            if not slower[label]:
                continue
            print(
                f"  while 4 clients pour {statistics.median(poured[label]):,.0f} spans/s"
                f" ({label}): {statistics.median(slower[label]):+.0f} % slower"
                f" (rounds: {', '.join(f'{x:+.0f}' for x in slower[label])})"
            )
    finally:
        Setting.objects.filter(key__in=LIFTED).delete()
        server.stop()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pour"]:
        sys.exit(pourer_process(sys.argv[2:]))
    sys.exit(main())
