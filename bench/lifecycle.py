"""Benchmark the todo lifecycle's hot path against its budgets (a benchmark, not a test).

Run it alone: ``.venv/bin/python bench/lifecycle.py`` (``make bench``; ``--quick`` for a smoke
run). It uses ``DATABASE_URL`` (else the embedded server, through settings) and TRUNCATEs
``todos`` and ``todo_attempts`` there, so point it at a database of its own.

What it measures, each for ``--seconds`` at every ``--threads`` count, on 20,000 freshly seeded
pending todos (after 10,000 completed ones, so statistics and index sizes are a live system's),
repeated ``--rounds`` times with the variants interleaved so that drift and the neighbours' load
fall on all of them alike:

- cycles: claim_next + complete,
  ``a``  through ``todos.lifecycle`` (Django's connection, the product's settings),
  ``a-notify``  ``a`` with its change-feed announcements never sent,
  ``b``  the same two statements (``lifecycle.CLAIM_NEXT_UNLIMITED``/``COMPLETE``, same parameters:
  what ``a`` runs for the bench's queue, which sets no limit) on a
  bare psycopg connection per thread in autocommit, their announcements sent as the product's,
  ``c``  bare statements without attempt history (``bench/sql/*_no_attempts.sql``);
- heartbeats over N claimed todos per thread: ``hb-a`` through ``lifecycle.heartbeat``, ``hb-b``
  the bare ``lifecycle.HEARTBEAT``, ``hb-c`` bare without the attempt update and the fence.

It prints operations/s (median over rounds), client and PostgreSQL CPU per operation (the
backends' ``/proc`` times, when the server is local) and WAL per operation (pg_walinspect,
filtered to this database: the WAL position alone is cluster-wide and other databases write to
it), then the budgets' ratios (docs/performance.md, "Budgets"), each the median of its
per-round ratios and next to it the CPU-bound ratio (client + server CPU per operation,
steadier on a shared machine). Ablations, which change the schema or the statements to price one
decision, are in ``bench/ablations/`` and reuse this module's machinery.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "switchboard.settings")

# The project's modules need settings configured first, hence the imports after setup().
import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection, connections  # noqa: E402
from psycopg.types.json import Jsonb  # noqa: E402

from bench import seeding  # noqa: E402
from switchboard import credentials, embedded, runtime_settings  # noqa: E402
from switchboard.lib import changefeed  # noqa: E402
from switchboard.lib.sql import NOTIFIED, load, positional  # noqa: E402
from switchboard.models import Endpoint, Human  # noqa: E402
from todos import lifecycle  # noqa: E402
from todos.lifecycle.statements import NOTIFY_CHANGED_SQL  # noqa: E402

BENCH_SQL = Path(__file__).resolve().parent / "sql"
TODOS_SQL = ROOT / "todos" / "sql"

QUEUE = "bench"
TTL_SECONDS = 300
CLAIMANT = "bench/lifecycle"
RESULT = {"ok": True, "checks": ["lint", "unit"], "duration_ms": 5123}
SUMMARY = "fixed the flaky check; reran the suite twice, green both times"
WARMUP_CYCLES = 10  # past psycopg's prepare threshold (5) before the clock starts

GOALS = {
    "django": 0.10,
    "attempts": 0.25,
    "heartbeat": 0.10,
    # Django's share of the heartbeat: held at 4 threads (docs/performance.md, "Budgets").
    "heartbeat_django": 0.15,
    # The change feed's announcements on claim + complete (a against a-notify).
    "feed": 0.03,
}
# What the heartbeat may cost through Django with its attempt write, if each overhead is within
# its own budget: 1 - (1 - 0.15) * (1 - 0.10) = 23.5 %.
END_TO_END_GOAL = 1 - (1 - GOALS["heartbeat_django"]) * (1 - GOALS["heartbeat"])

# Baselines without attempt history share the product's claim predicate, with the takeover's
# "its open attempt is visible" check (_current_attempt.sql) true: without attempts there is none.
_NO_ATTEMPT_FRAGMENTS = {
    "claimable": load(TODOS_SQL, "_claimable", current_attempt="TRUE"),
    # The paused-queue probe on claim_next's own parameters, as the product's (_queue_open.sql).
    "pause_endpoint": "%(endpoint_id)s",
    "pause_queue": "%(queue)s",
    # The queue-limits guard of the claim the product runs for a queue that sets no limit, as
    # the bench's does (_queue_unlimited.sql in place of _queue_limits.sql).
    "queue_limits": "@{queue_unlimited}",
    # The change feed's announcement, as the product's claim and complete make it: not attempt
    # history, so both sides of b/c pay it (its own price: a-notify here, b-notify in
    # bench/ablations).
    "notify_changed": NOTIFY_CHANGED_SQL,
}
# ... and the product's choice of candidate (todos/sql/_claim_next_cand.sql), with that predicate.
_NO_ATTEMPT_FRAGMENTS["claim_next_cand"] = load(
    TODOS_SQL, "_claim_next_cand", **_NO_ATTEMPT_FRAGMENTS
)


def _bench_statement(name: str) -> str:
    return load(BENCH_SQL, name, **_NO_ATTEMPT_FRAGMENTS)


CLAIM_NEXT_NO_ATTEMPTS = _bench_statement("claim_next_no_attempts")
COMPLETE_NO_ATTEMPTS = _bench_statement("complete_no_attempts")
HEARTBEAT_NO_ATTEMPTS = _bench_statement("heartbeat_no_attempts")

# WAL written by this database between two positions: records with a block in it, plus the
# commit records of the transactions that wrote them. Heap UPDATE vs HOT_UPDATE counts on the
# two tables say whether heartbeats stay HOT.
WAL_COST = """
WITH r AS (
    SELECT xid::text::bigint AS xid, resource_manager AS rm, record_type AS rt,
           record_length AS len, fpi_length AS fpi, block_ref
      FROM pg_get_wal_records_info(%(start)s::pg_lsn, %(end)s::pg_lsn)
),
ours AS (SELECT * FROM r WHERE block_ref LIKE %(db)s),
xids AS (SELECT DISTINCT xid FROM ours WHERE xid <> 0),
mine AS (
    SELECT * FROM ours
    UNION ALL
    SELECT r.* FROM r JOIN xids USING (xid) WHERE r.rm = 'Transaction'
)
SELECT count(*), COALESCE(sum(len), 0), COALESCE(sum(fpi), 0),
       count(*) FILTER (WHERE rm = 'Heap' AND rt LIKE 'UPDATE%%' AND block_ref LIKE %(todos)s),
       count(*) FILTER (WHERE rm = 'Heap' AND rt LIKE 'HOT_UPDATE%%' AND block_ref LIKE %(todos)s),
       count(*) FILTER (WHERE rm = 'Heap' AND rt LIKE 'UPDATE%%' AND block_ref LIKE %(att)s),
       count(*) FILTER (WHERE rm = 'Heap' AND rt LIKE 'HOT_UPDATE%%' AND block_ref LIKE %(att)s)
  FROM mine
"""


# --- clients: one per thread, created in the thread that uses it ------------------------------


class Client(Protocol):
    def claim(self) -> str | None: ...
    def complete(self, todo_id: str) -> None: ...
    def heartbeat(self, todo_id: str) -> None: ...
    def backend_pid(self) -> int: ...
    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Target:
    """What every client of a run works on: the endpoint, and where the database is."""

    url: str
    endpoint_id: uuid.UUID
    attempts_cap: int


class DjangoClient:
    """The product's path: ``todos.lifecycle`` on this thread's Django connection."""

    def __init__(self, target: Target, owner: str) -> None:
        self.endpoint_id = target.endpoint_id
        self.owner = owner

    def claim(self) -> str | None:
        result = lifecycle.claim_next(
            self.endpoint_id,
            [QUEUE],
            owner=self.owner,
            lease_ttl_seconds=TTL_SECONDS,
            claimant=CLAIMANT,
        )
        return None if result is None else result.todo.id

    def complete(self, todo_id: str) -> None:
        lifecycle.complete(
            self.endpoint_id, todo_id, owner=self.owner, result=RESULT, summary=SUMMARY
        )

    def heartbeat(self, todo_id: str) -> None:
        lifecycle.heartbeat(
            self.endpoint_id, todo_id, owner=self.owner, lease_ttl_seconds=TTL_SECONDS
        )

    def backend_pid(self) -> int:
        connection.ensure_connection()
        raw = connection.connection
        assert raw is not None
        return int(raw.info.backend_pid)

    def close(self) -> None:
        connections.close_all()


class NoteClient(DjangoClient):
    """``lifecycle.heartbeat`` with a progress note on every beat (the note statement)."""

    def heartbeat(self, todo_id: str) -> None:
        lifecycle.heartbeat(
            self.endpoint_id,
            todo_id,
            owner=self.owner,
            lease_ttl_seconds=TTL_SECONDS,
            note="ran 40 of 120 tests; 3 red so far, bisecting the retry helper",
        )


@contextmanager
def every_note_stored() -> Iterator[None]:
    """Raise the note caps for a run, so every beat stores its note (the path an agent on a
    note a minute takes) rather than counting it as dropped."""
    keys = {"notes_max_per_attempt": 10_000, "activity_max_per_todo": 100_000}
    before = runtime_settings.current()
    for key, value in keys.items():
        runtime_settings.put(key, value)
    runtime_settings.clear_cache()
    try:
        yield
    finally:
        for key in keys:
            runtime_settings.put(key, getattr(before, key))
        runtime_settings.clear_cache()


@dataclass(frozen=True, slots=True)
class BareStatements:
    # What lifecycle.claim_next runs for the bench's queue, which sets no limit.
    claim: str = lifecycle.CLAIM_NEXT_UNLIMITED
    complete: str = lifecycle.COMPLETE
    heartbeat: str = lifecycle.HEARTBEAT
    # Hand the statements' announcements to the change feed's announcer, as
    # switchboard/lib/sql.py does for the product (after the statement's autocommit).
    announce: bool = True


class BareClient:
    """The same statements with nothing in between: psycopg, autocommit, tuple rows, and their
    announcements handed to the announcer as the product's are."""

    def __init__(
        self, target: Target, owner: str, statements: BareStatements, *, prepare: bool
    ) -> None:
        self.sql = statements
        # psycopg prepares a statement server-side after 5 executions unless told not to.
        self.conn = psycopg.connect(
            target.url,
            autocommit=True,
            prepare_threshold=5 if prepare else None,
            application_name="switchboard-bench",
        )
        # As the product's kept cursor sends them (switchboard/lib/sql.py): placeholders
        # numbered once a statement, not parsed again on every execute.
        self.cur = psycopg.RawCursor(self.conn)
        self._notified: dict[str, int | None] = {}  # statement → its `notified` column
        self.base = {"endpoint_id": target.endpoint_id, "owner": owner, "token_hash": None}
        self.claim_params = {
            **self.base,
            "queue": QUEUE,
            "queues": [QUEUE],
            "ttl_seconds": TTL_SECONDS,
            "claimer_kind": "endpoint",
            "claimer_endpoint_id": target.endpoint_id,
            "claimer_session": None,
            "claimant": CLAIMANT,
            "attempts_cap": target.attempts_cap,
            "trace_id": None,
        }

    def _execute(self, sql: str, params: dict[str, Any]) -> None:
        self.cur.execute(*positional(sql, params))

    def claim(self) -> str | None:
        self._execute(self.sql.claim, self.claim_params)
        row = self.cur.fetchone()
        if row is not None:
            self._announce(self.sql.claim, row)
        return None if row is None else str(row[0])

    def _announce(self, sql: str, row: tuple[Any, ...]) -> None:
        if not self.sql.announce:
            return
        if (column := self._notified.get(sql, -1)) == -1:
            names = [c.name for c in self.cur.description or ()]
            column = self._notified[sql] = names.index(NOTIFIED) if NOTIFIED in names else None
        if column is not None and (payload := row[column]):
            changefeed.announce((payload,))

    def complete(self, todo_id: str) -> None:
        params = {
            **self.base,
            "id": todo_id,
            "result": Jsonb(RESULT),
            "summary": SUMMARY,
            "summary_truncated": False,
            "artifact": None,
        }
        self._execute(self.sql.complete, params)
        if (row := self.cur.fetchone()) is None:
            raise RuntimeError(f"complete missed {todo_id}")
        self._announce(self.sql.complete, row)

    def heartbeat(self, todo_id: str) -> None:
        self._execute(
            self.sql.heartbeat,
            {**self.base, "id": todo_id, "ttl_seconds": TTL_SECONDS, "ttl_default": TTL_SECONDS},
        )
        if self.cur.fetchone() is None:
            raise RuntimeError(f"heartbeat missed {todo_id}")

    def backend_pid(self) -> int:
        return int(self.conn.info.backend_pid)

    def close(self) -> None:
        self.conn.close()


# --- variants ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Variant:
    key: str
    kind: Literal["cycle", "heartbeat"]
    label: str
    make: Callable[[Target, str], Client]
    baseline: str | None = None  # the variant whose throughput this one is compared with
    # Entered before each measurement's seeding and left after it (an ablation's schema change).
    around: Callable[[], AbstractContextManager[object]] | None = None
    # Run after seeding, before the workers start (an ablation's leases held by another agent).
    after_seed: Callable[[Target], None] | None = None


def bare_client(statements: BareStatements) -> Callable[[Target, str], Client]:
    return lambda target, owner: BareClient(target, owner, statements, prepare=True)


LIFECYCLE = BareStatements()
NO_ATTEMPTS = BareStatements(
    claim=CLAIM_NEXT_NO_ATTEMPTS, complete=COMPLETE_NO_ATTEMPTS, heartbeat=HEARTBEAT_NO_ATTEMPTS
)


@contextmanager
def no_announcements() -> Iterator[None]:
    """The product's statements with their announcements computed and never sent: what the
    change feed costs the cycle is ``1 - a/a-notify``."""
    before = changefeed.announce
    changefeed.announce = lambda payloads: None
    try:
        yield
    finally:
        changefeed.announce = before


# The variants the budgets' ratios are made of, and nothing else (docs/performance.md).
VARIANTS: tuple[Variant, ...] = (
    Variant("a", "cycle", "lifecycle via Django (the product's settings)", DjangoClient, "b"),
    Variant(
        "a-notify",
        "cycle",
        "a announcing nothing (no change feed)",
        DjangoClient,
        "a",
        around=lambda: no_announcements(),
    ),
    Variant("b", "cycle", "bare psycopg, lifecycle SQL (prepared after 5)", bare_client(LIFECYCLE)),
    Variant(
        "c", "cycle", "bare psycopg, no attempt arms (prepared after 5)", bare_client(NO_ATTEMPTS)
    ),
    Variant("hb-a", "heartbeat", "lifecycle.heartbeat via Django", DjangoClient, "hb-b"),
    Variant(
        "hb-b",
        "heartbeat",
        "bare HEARTBEAT (attempt written once a minute)",
        bare_client(LIFECYCLE),
        "hb-c",
    ),
    Variant(
        "hb-c",
        "heartbeat",
        "bare heartbeat, no attempt update, no fence",
        bare_client(NO_ATTEMPTS),
    ),
    Variant(
        "hb-note",
        "heartbeat",
        "lifecycle.heartbeat with a note, via Django",
        NoteClient,
        "hb-a",
        around=every_note_stored,
    ),
)
BY_KEY = {v.key: v for v in VARIANTS}


# --- the database: seeding, costs -------------------------------------------------------------


def ensure_endpoint() -> uuid.UUID:
    """The benchmark's human and endpoint (kept between runs; only todos are reseeded)."""
    human, _ = Human.objects.get_or_create(username="bench", defaults={"is_active": False})
    endpoint = Endpoint.objects.filter(slug="bench").first()
    if endpoint is None:
        # Its key is never used: the benchmark calls the lifecycle directly.
        endpoint, _, _ = credentials.create_endpoint(
            human,
            name="Benchmark agent",
            slug="bench",
            verbs=["claim_next", "heartbeat", "complete"],
        )
    return endpoint.id


@dataclass(frozen=True, slots=True)
class Wal:
    records: int
    bytes: int
    fpi_bytes: int
    todo_updates: int
    todo_hot: int
    attempt_updates: int
    attempt_hot: int


class WalMeter:
    """WAL this database wrote between two positions, via pg_walinspect when it is available.

    Neighbours' test runs drop databases, which forces checkpoints, which recycle WAL segments
    within seconds; a temporary physical slot keeps a measurement's WAL until it has been read.
    The slot is the session's: it goes when the bench releases it or its connection ends.
    """

    def __init__(self, admin: psycopg.Connection[Any], enabled: bool) -> None:
        self.admin = admin
        self.enabled = enabled
        self.slot = f"switchboard_bench_{os.getpid()}"
        self.holding = False
        if enabled:
            try:
                admin.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
            except psycopg.Error as exc:
                print(f"(no WAL figures: pg_walinspect unavailable: {exc})", file=sys.stderr)
                self.enabled = False

    def start(self) -> str | None:
        """Hold the WAL from here on and return the position."""
        if not self.enabled:
            return None
        if not self.holding:
            try:
                self.admin.execute(
                    "SELECT pg_create_physical_replication_slot(%s, true, true)", [self.slot]
                )
                self.holding = True
            except psycopg.Error as exc:
                # Without a slot the figures are still right when no checkpoint intervenes.
                print(f"(WAL not held, no temporary slot: {exc})", file=sys.stderr)
        return self.position()

    def position(self) -> str | None:
        if not self.enabled:
            return None
        row = self.admin.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()
        assert row is not None
        return str(row[0])

    def release(self) -> None:
        if self.holding:
            self.admin.execute("SELECT pg_drop_replication_slot(%s)", [self.slot])
            self.holding = False

    def between(self, start: str | None, end: str | None) -> Wal | None:
        if start is None or end is None:
            return None
        row = self.admin.execute(
            "SELECT (SELECT oid FROM pg_database WHERE datname = current_database()),"
            " pg_relation_filenode('todos'), pg_relation_filenode('todo_attempts')"
        ).fetchone()
        assert row is not None
        db, todos, attempts = row
        params = {
            "start": start,
            "end": end,
            "db": f"%/{db}/%",
            "todos": f"%/{db}/{todos} fork main%",
            "att": f"%/{db}/{attempts} fork main%",
        }
        try:
            out = self.admin.execute(WAL_COST, params).fetchone()
        except psycopg.errors.UndefinedFile as exc:
            print(f"(WAL figures lost for one sample: {exc})", file=sys.stderr)
            return None
        finally:
            self.release()
        assert out is not None
        return Wal(*(int(v) for v in out))


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU of a local process, from /proc; None if it cannot be read."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_is_local(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("", "localhost", "127.0.0.1", "::1") or host.startswith("/")


def _is_postgres(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"postgres")
    except OSError:
        return False


# --- one measurement --------------------------------------------------------------------------


@dataclass(slots=True)
class Sample:
    key: str
    threads: int
    round: int
    ops: int
    seconds: float
    client_cpu: float
    server_cpu: float | None
    wal: Wal | None
    exhausted: bool

    @property
    def rate(self) -> float:
        return self.ops / self.seconds


@dataclass(slots=True)
class _Worker:
    index: int
    ops: int = 0
    end: float = 0.0
    pid: int = 0
    exhausted: bool = False
    error: BaseException | None = None


@dataclass(slots=True)
class _Phases:
    """Hand-offs between the main thread and the workers: ready → go → done → close."""

    ready: threading.Barrier
    done: threading.Barrier
    go: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    deadline: float = 0.0


def claim_for_heartbeats(target: Target, owner: str, n: int) -> list[str]:
    """Claim ``n`` todos for ``owner`` with the product's claim (so every heartbeat variant
    starts from the same rows and open attempts)."""
    setup = BareClient(target, owner, LIFECYCLE, prepare=False)
    try:
        ids = [setup.claim() for _ in range(n)]
    finally:
        setup.close()
    if None in ids:
        raise RuntimeError("ran out of todos while claiming for heartbeats; raise --todos")
    return [i for i in ids if i is not None]


def _work(
    variant: Variant, target: Target, worker: _Worker, phases: _Phases, hb_todos: int
) -> None:
    owner = f"bench-{worker.index}"
    client: Client | None = None
    try:
        client = variant.make(target, owner)
        worker.pid = client.backend_pid()
        if variant.kind == "cycle":
            for _ in range(WARMUP_CYCLES):
                todo_id = client.claim()
                assert todo_id is not None
                client.complete(todo_id)
        else:
            ids = claim_for_heartbeats(target, owner, hb_todos)
            # One pass first: prepares the statement, and the sampled attempt write happens
            # here, so the clock sees the steady state of an agent heartbeating more often than
            # once a minute.
            for todo_id in ids:
                client.heartbeat(todo_id)
        phases.ready.wait()
        phases.go.wait()
        deadline = phases.deadline
        if variant.kind == "cycle":
            while time.monotonic() < deadline:
                todo_id = client.claim()
                if todo_id is None:
                    worker.exhausted = True
                    break
                client.complete(todo_id)
                worker.ops += 1
        else:
            i = 0
            while time.monotonic() < deadline:
                client.heartbeat(ids[i])
                i = (i + 1) % len(ids)
                worker.ops += 1
        worker.end = time.monotonic()
    except BaseException as exc:
        worker.error = exc
        phases.ready.abort()
        phases.done.abort()
    finally:
        try:
            phases.done.wait()
            phases.release.wait()
        except threading.BrokenBarrierError:
            pass
        if client is not None:
            client.close()


def measure(
    variant: Variant,
    threads: int,
    round_no: int,
    *,
    admin: psycopg.Connection[Any],
    wal: WalMeter,
    target: Target,
    args: argparse.Namespace,
    local: bool,
) -> Sample:
    with variant.around() if variant.around is not None else nullcontext():
        seeding.seed(
            admin,
            target.endpoint_id,
            QUEUE,
            args.todos,
            args.history,
            priorities=getattr(args, "priorities", False),
        )
        if variant.after_seed is not None:
            variant.after_seed(target)
        workers = [_Worker(i) for i in range(threads)]
        phases = _Phases(threading.Barrier(threads + 1), threading.Barrier(threads + 1))
        pool = [
            threading.Thread(target=_work, args=(variant, target, w, phases, args.heartbeat_todos))
            for w in workers
        ]
        for t in pool:
            t.start()
        pids: list[int] = []
        cpu0: list[float | None] = []
        cpu1: list[float | None] = []
        lsn0 = lsn1 = None
        client0 = client1 = start = 0.0
        try:
            phases.ready.wait()
            pids = [w.pid for w in workers]
            if (announcer := changefeed.ANNOUNCER.backend_pid) is not None:
                pids.append(announcer)  # its CPU is the cycle's too
            if not (local and all(_is_postgres(p) for p in pids)):
                pids = []
            cpu0 = [_cpu_seconds(p) for p in pids]
            lsn0 = wal.start()
            client0 = time.process_time()
            start = time.monotonic()
            phases.deadline = start + args.seconds
            phases.go.set()
            phases.done.wait()
            # What the workers announced is sent within the window it is counted in.
            changefeed.ANNOUNCER.flush()
            client1 = time.process_time()
            cpu1 = [_cpu_seconds(p) for p in pids]
            lsn1 = wal.position()
        except threading.BrokenBarrierError:
            pass
        finally:
            phases.go.set()
            phases.release.set()
            for t in pool:
                t.join()
        for w in workers:
            if w.error is not None:
                raise RuntimeError(f"{variant.key} thread {w.index} failed") from w.error
        elapsed = max(w.end for w in workers) - start
        server = None
        if pids and None not in cpu0 and None not in cpu1:
            server = sum((b or 0.0) - (a or 0.0) for a, b in zip(cpu0, cpu1, strict=True))
        return Sample(
            key=variant.key,
            threads=threads,
            round=round_no,
            ops=sum(w.ops for w in workers),
            seconds=elapsed,
            client_cpu=client1 - client0,
            server_cpu=server,
            wal=wal.between(lsn0, lsn1),
            exhausted=any(w.exhausted for w in workers),
        )


# --- report -----------------------------------------------------------------------------------


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _find(samples: Sequence[Sample], key: str, threads: int) -> list[Sample]:
    return [s for s in samples if s.key == key and s.threads == threads]


def paired_ratio(samples: Sequence[Sample], key: str, base: str, threads: int) -> float | None:
    """Median over rounds of rate(key)/rate(base), each pair measured in the same round."""
    bases = {s.round: s.rate for s in _find(samples, base, threads)}
    ratios = [s.rate / bases[s.round] for s in _find(samples, key, threads) if s.round in bases]
    return _median(ratios)


def cpu_per_op(samples: Sequence[Sample], key: str, threads: int) -> float | None:
    """Median client + PostgreSQL CPU seconds per operation; None without the server's figure."""
    got = [s for s in _find(samples, key, threads) if s.ops and s.server_cpu is not None]
    if not got:
        return None
    client = statistics.median(s.client_cpu / s.ops for s in got)
    server = statistics.median(s.server_cpu / s.ops for s in got if s.server_cpu is not None)
    return client + server


def _fmt(value: float | None, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def print_header(admin: psycopg.Connection[Any], args: argparse.Namespace, local: bool) -> None:
    def show(name: str) -> str:
        row = admin.execute(f"SHOW {name}").fetchone()
        return str(row[0]) if row else "?"

    version = admin.execute("SELECT current_setting('server_version')").fetchone()
    load1, load5, _ = os.getloadavg()
    options = connections.settings["default"]["OPTIONS"]
    print(f"bench/lifecycle.py  {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    print(
        f"PostgreSQL {version[0] if version else '?'} ({'local' if local else 'remote'}),"
        f" synchronous_commit={show('synchronous_commit')}, fsync={show('fsync')},"
        f" shared_buffers={show('shared_buffers')}, plan_cache_mode={show('plan_cache_mode')}"
    )
    print(
        f"client: Python {sys.version.split()[0]}, Django {django.get_version()},"
        f" psycopg {psycopg.__version__}; {os.cpu_count()} CPUs, load {load1:.2f}/{load5:.2f};"
        f" Django OPTIONS {options}"
    )
    print(
        f"{args.todos} pending todos (after {args.history} completed) per measurement,"
        f" {args.seconds:g} s each,"
        f" {args.rounds} round(s), threads {args.threads},"
        f" {args.heartbeat_todos} claimed todos per heartbeat thread"
    )


def print_table(
    samples: Sequence[Sample], variants: Sequence[Variant], threads: Sequence[int]
) -> None:
    for kind, title, unit in (
        ("cycle", "claim_next + complete", "cycles/s"),
        ("heartbeat", "heartbeat", "beats/s"),
    ):
        rows = [v for v in variants if v.kind == kind]
        if not rows:
            continue
        print()
        print(f"{title}: medians over rounds; per-op costs are per {unit[:-2]}")
        head = (
            f"{'variant':<14}{'thr':>4}{unit:>10}{'range':>15}{'vs base':>18}"
            f"{'client µs':>11}{'server µs':>11}{'WAL B':>8}{'FPI B':>8}"
        )
        if kind == "heartbeat":
            head += f"{'HOT todos':>11}{'HOT att.':>10}"
        print(head)
        for n in threads:
            for v in rows:
                got = _find(samples, v.key, n)
                if not got:
                    continue
                rates = [s.rate for s in got]
                per_op = [s for s in got if s.ops]
                client = _median([s.client_cpu / s.ops * 1e6 for s in per_op])
                server = _median(
                    [s.server_cpu / s.ops * 1e6 for s in per_op if s.server_cpu is not None]
                )
                # Record bytes without full-page images: those depend on when the neighbours'
                # last forced checkpoint happened, not on the statements.
                wal = _median(
                    [(s.wal.bytes - s.wal.fpi_bytes) / s.ops for s in per_op if s.wal is not None]
                )
                fpi = _median([s.wal.fpi_bytes / s.ops for s in per_op if s.wal is not None])
                vs = paired_ratio(samples, v.key, v.baseline, n) if v.baseline else None
                vs_text = "" if vs is None else f"{(vs - 1) * 100:+.1f}% {v.baseline}"
                line = (
                    f"{v.key:<14}{n:>4}{_median(rates) or 0:>10.0f}"
                    f"{f'{min(rates):.0f}-{max(rates):.0f}':>15}{vs_text:>18}"
                    f"{_fmt(client, '.0f'):>11}{_fmt(server, '.0f'):>11}"
                    f"{_fmt(wal, '.0f'):>8}{_fmt(fpi, '.0f'):>8}"
                )
                if kind == "heartbeat":
                    line += f"{_hot(got, 'todo'):>11}{_hot(got, 'attempt'):>10}"
                if any(s.exhausted for s in got):
                    line += "  (ran out of todos: raise --todos)"
                print(line)
    print()
    print("variants:")
    for v in variants:
        print(f"  {v.key:<14}{v.label}")


def _hot(samples: Sequence[Sample], table: str) -> str:
    walled = [s.wal for s in samples if s.wal is not None]
    updates = sum(getattr(w, f"{table}_updates") + getattr(w, f"{table}_hot") for w in walled)
    hot = sum(getattr(w, f"{table}_hot") for w in walled)
    return f"{hot / updates * 100:.0f}%" if updates else "-"


# Django's share of the heartbeat is held from this many threads (at one, a beat is a round trip
# whose Python is a larger share, and the issue's budget names four).
HEARTBEAT_DJANGO_THREADS = 4

# The budgets' ratios (docs/performance.md, "Budgets"): name, formula, variant, its base, budget,
# note. Indented names are read beside the budget above them and not counted in the verdict.
RATIOS: tuple[tuple[str, str, str, str, float, str], ...] = (
    ("Django overhead", "1 - a/b", "a", "b", GOALS["django"], ""),
    ("attempt-history cost", "1 - b/c", "b", "c", GOALS["attempts"], ""),
    ("heartbeat overhead", "1 - hb-b/hb-c", "hb-b", "hb-c", GOALS["heartbeat"], ""),
    ("change feed", "1 - a/a-notify", "a", "a-notify", GOALS["feed"], ""),
    (
        "Django on the heartbeat",
        "1 - hb-a/hb-b",
        "hb-a",
        "hb-b",
        GOALS["heartbeat_django"],
        "at 4 threads",
    ),
    # Through Django with the attempt write, the heartbeat carries both budgets at once.
    ("  end to end", "1 - hb-a/hb-c", "hb-a", "hb-c", END_TO_END_GOAL, "both together"),
    # A note's cost has no budget; it is reported so that it stays visible.
    ("  a note on the heartbeat", "1 - hb-note/hb-a", "hb-note", "hb-a", 1.0, "reported only"),
)


def print_ratios(samples: Sequence[Sample], threads: Sequence[int]) -> list[bool]:
    """Print the budgets' ratios; return whether each measured budget was met."""
    print()
    print("ratios: throughput (median of per-round ratios), and CPU-bound (client + PostgreSQL")
    print("CPU per op, what the throughput ratio tends to when the cores are the limit)")
    met: list[bool] = []
    for name, formula, key, base, goal, note in RATIOS:
        values = [paired_ratio(samples, key, base, n) for n in threads]
        if all(v is None for v in values):
            continue
        cells = []
        ok = True
        for n, v in zip(threads, values, strict=True):
            if v is None:
                cells.append(f"{n} thr: -")
                continue
            cost = 1 - v
            if n >= HEARTBEAT_DJANGO_THREADS or key != "hb-a" or base != "hb-b":
                ok = ok and cost <= goal
            cpu_key, cpu_base = cpu_per_op(samples, key, n), cpu_per_op(samples, base, n)
            cpu = (
                ""
                if not (cpu_key and cpu_base)
                else f" (CPU {(1 - cpu_base / cpu_key) * 100:.0f} %)"
            )
            cells.append(f"{n} thr: {cost * 100:5.1f} %{cpu:<11}")
        verdict = "met" if ok else "NOT met"
        extra = f" ({note})" if note else ""
        goal_text = f"goal <= {goal * 100:g} %: {verdict}{extra}"
        print(f"  {name:<31}{formula:<20}{'  '.join(cells)}  {goal_text}")
        if not name.startswith("  "):
            met.append(ok)
    return met


# --- main -------------------------------------------------------------------------------------


def argument_parser(description: str) -> argparse.ArgumentParser:
    """The options every lifecycle benchmark takes (this one and ``bench/ablations/``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seconds", type=float, default=5.0, help="per measurement (5)")
    parser.add_argument("--rounds", type=int, default=4, help="repetitions, interleaved (4)")
    parser.add_argument("--todos", type=int, default=20_000, help="pending todos seeded (20000)")
    parser.add_argument("--threads", default="1,4", help="thread counts, comma-separated (1,4)")
    parser.add_argument(
        "--heartbeat-todos", type=int, default=100, help="claimed todos per heartbeat thread"
    )
    parser.add_argument(
        "--history", type=int, default=10_000, help="completed todos seeded first (10000)"
    )
    parser.add_argument("--only", default="", help="comma-separated variant keys to run")
    parser.add_argument(
        "--priorities", action="store_true", help="seed pending todos of 21 mixed priorities"
    )
    parser.add_argument("--no-wal", action="store_true", help="skip the WAL figures")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 s, 1 round, 5000 todos")
    return parser


def finish_args(args: argparse.Namespace) -> argparse.Namespace:
    if args.quick:
        args.seconds, args.rounds, args.todos, args.history = 1.0, 1, 5_000, 1_000
    args.threads = [int(t) for t in str(args.threads).split(",") if t.strip()]
    return args


def select(args: argparse.Namespace, known: dict[str, Variant]) -> list[Variant]:
    """The variants ``--only`` names, else all of ``known``."""
    if not args.only:
        return list(known.values())
    keys = [k.strip() for k in args.only.split(",") if k.strip()]
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise SystemExit(f"unknown variant(s) {unknown}; known: {', '.join(known)}")
    return [known[k] for k in keys]


def run(variants: Sequence[Variant], args: argparse.Namespace) -> list[Sample]:
    """Measure ``variants`` for ``args.rounds`` rounds and print their table."""
    embedded.ensure_running()  # DATABASE_URL unset: settings only describe the server
    url = str(settings.DATABASE_URL)
    local = server_is_local(url)
    endpoint_id = ensure_endpoint()
    target = Target(url, endpoint_id, runtime_settings.current().attempts_max_per_todo)
    samples: list[Sample] = []
    with psycopg.connect(url, autocommit=True, application_name="switchboard-bench") as admin:
        wal = WalMeter(admin, enabled=not args.no_wal)
        print_header(admin, args, local)
        try:
            for round_no in range(args.rounds):
                # Every other round runs the variants in reverse, so each pair compared (a with
                # b, hb-b with hb-c) is measured first as often as second and a drift in the
                # neighbours' load does not favour either.
                order = variants if round_no % 2 == 0 else variants[::-1]
                for n in args.threads:
                    for v in order:
                        s = measure(
                            v,
                            n,
                            round_no,
                            admin=admin,
                            wal=wal,
                            target=target,
                            args=args,
                            local=local,
                        )
                        samples.append(s)
                        print(
                            f"  round {round_no + 1}/{args.rounds}  {v.key:<14}{n} thr"
                            f"  {s.rate:8.0f}/s",
                            file=sys.stderr,
                            flush=True,
                        )
        finally:
            wal.release()
            admin.execute("TRUNCATE todos, todo_attempts CASCADE")
    print_table(samples, variants, args.threads)
    return samples


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__.split("\n")[0] if __doc__ else "")
    args = finish_args(parser.parse_args(argv))
    samples = run(select(args, BY_KEY), args)
    print_ratios(samples, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
