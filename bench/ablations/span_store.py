"""A span batch's cost in PostgreSQL as the day partitions of ``todo_spans`` add up.

Not part of ``make bench``; run it alone: ``.venv/bin/python bench/ablations/span_store.py``
(``--quick`` for a smoke run). It prices the bound of docs/decisions/0040-span-partitions.md, on
one database, without HTTP: ``otlp.store.store`` called in this process for ``--batches``
batches of 100 new spans (shaped like ``bench/otlp.py``'s) into one claimed todo, after ten
uncounted, with

- ``--partitions N``: N empty partitions of past days made first (the days span retention
  keeps), dropped again at the end, even after an error;
- ``--bound``: ``product`` (counts.sql reads from the todos' creation on, a value from
  lock.sql, so the plan holds only the days since), or ``none`` (every partition: the
  statement as it would be without the bound);
- ``--plans``: ``kept`` (the product: the batch's first statement sets its transaction to the
  kept generic plans, otlp/sql/lock.sql) or ``session`` (the session's setting decides);
- ``--plan-cache-mode``: the session's setting, for ``--plans session`` (``auto``, PostgreSQL's
  default, re-plans a statement whose generic plan looks dearer than its custom ones).

It prints PostgreSQL's CPU per batch (its backend's, from /proc, when it runs on this machine),
the wall time per batch, and each statement's median time as the client sees it. Give it a
database of its own (it leaves a todo and its spans behind each run).
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "switchboard.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from bench.otlp import template  # noqa: E402
from otlp import store  # noqa: E402
from otlp.translate import Row, collect, translate  # noqa: E402
from switchboard import credentials  # noqa: E402
from switchboard.lib import sql  # noqa: E402
from switchboard.models import Endpoint, Human  # noqa: E402
from todos import lifecycle  # noqa: E402

SLUG = "bench-span-store"


def cpu_seconds(pid: int) -> float:
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def claimed() -> tuple[str, bytes]:
    human, _ = Human.objects.get_or_create(username="bench", defaults={"is_active": False})
    endpoint = Endpoint.objects.filter(slug=SLUG).first()
    if endpoint is None:
        endpoint, _, _ = credentials.create_endpoint(
            human, name="span store", slug=SLUG, verbs=["claim_next"]
        )
    trace = secrets.token_bytes(16)
    lifecycle.create(endpoint.id, queue="spans")
    claim = lifecycle.claim_next(endpoint.id, ["spans"], owner="endpoint:bench", trace_id=trace)
    assert claim is not None
    return claim.todo.id, trace


def batch(todo_id: str, trace: bytes) -> list[Row]:
    """A 100-span batch shaped as ``bench/otlp.py`` sends it, translated as the receiver does."""
    message = template(trace, 100)
    return [translate(c, todo_id, 1, False) for c in collect(message).candidates]


@contextmanager
def past_partitions(n: int) -> Iterator[None]:
    """N empty partitions of the days before the oldest one there is, dropped on the way out."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT coalesce(min(to_date(substr(c.relname, 13), 'YYYYMMDD')),"
            " (now() AT TIME ZONE 'UTC')::date) FROM pg_inherits i"
            " JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = 'todo_spans'::regclass AND c.relname ~ '^todo_spans_p[0-9]{8}$'"
        )
        row = cur.fetchone()
        assert row is not None
        oldest = row[0]
        cur.execute(
            "SELECT sb_span_partition_add(%s::date - i) FROM generate_series(1, %s) AS i",
            [oldest, n],
        )
    try:
        yield
    finally:
        with connection.cursor() as cur:
            cur.execute(
                "SELECT sb_span_partition_drop(%s::date - i) FROM generate_series(1, %s) AS i",
                [oldest, n],
            )


@contextmanager
def timed_statements(times: dict[str, list[float]]) -> Iterator[None]:
    """Record each statement's time as the client sees it, by its first line."""
    original = sql._fetch

    def fetch(statement: str, params: Mapping[str, Any] | Sequence[Any], rows: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(statement, params, rows)
        finally:
            name = statement.strip().splitlines()[0][:48]
            times.setdefault(name, []).append(time.perf_counter() - started)

    sql._fetch = fetch  # type: ignore[assignment]
    try:
        yield
    finally:
        sql._fetch = original  # type: ignore[assignment]


def unbounded(module: Any) -> None:
    """Make the store's counts.sql read every partition: its ``since`` always NULL."""
    fetch_all = module.fetch_all

    def fetch(statement: str, params: Mapping[str, Any]) -> Any:
        if statement is module.COUNTS:
            params = {**params, "since": None}
        return fetch_all(statement, params)

    module.fetch_all = fetch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=30, help="empty past days to add")
    parser.add_argument("--bound", choices=("product", "none"), default="product")
    parser.add_argument(
        "--plan-cache-mode",
        choices=("auto", "force_generic_plan", "force_custom_plan"),
        default="auto",
    )
    parser.add_argument(
        "--plans",
        choices=("kept", "session"),
        default="kept",
        help="kept: the batch's statements run their kept generic plans, as the product's do"
        " (lock.sql); session: --plan-cache-mode decides",
    )
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 10 batches")
    args = parser.parse_args(argv)
    if args.quick:
        args.batches = 10
    if args.bound == "none":
        unbounded(store)
    if args.plans == "session":
        store._kept_plans = lambda: False  # type: ignore[assignment]
    todo_id, trace = claimed()
    with connection.cursor() as cur:
        cur.execute("SELECT set_config('plan_cache_mode', %s, false)", [args.plan_cache_mode])
        cur.execute("SELECT pg_backend_pid()")
        row = cur.fetchone()
        assert row is not None
        pid = row[0]
    times: dict[str, list[float]] = {}
    with past_partitions(args.partitions):
        for _ in range(10):  # warm up: psycopg prepares a statement at its fifth run
            store.store(batch(todo_id, trace), set(), attempt_cap=10**7, todo_cap=10**7)
        batches = [batch(todo_id, trace) for _ in range(args.batches)]
        try:
            cpu0 = cpu_seconds(pid)
        except OSError:
            cpu0 = None
        started = time.perf_counter()
        with timed_statements(times):
            for rows in batches:
                store.store(rows, set(), attempt_cap=10**7, todo_cap=10**7)
        wall = (time.perf_counter() - started) / args.batches
        cpu = None if cpu0 is None else (cpu_seconds(pid) - cpu0) / args.batches
        with connection.cursor() as cur:
            cur.execute("SELECT count(*) FROM pg_inherits WHERE inhparent = 'todo_spans'::regclass")
            row = cur.fetchone()
            parts = row[0] if row else 0
    shown = "-" if cpu is None else f"{cpu * 1000:.2f} ms"
    print(
        f"{parts} partitions, bound {args.bound}, plans"
        f" {'kept' if args.plans == 'kept' else args.plan_cache_mode}:"
        f" PostgreSQL CPU {shown} a batch,"
        f" wall {wall * 1000:.2f} ms a batch ({args.batches} batches of 100 spans)"
    )
    for name, values in times.items():
        print(f"  {statistics.median(values) * 1000:8.2f} ms  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
