"""Benchmark claim_next against the backlog of queues it did not ask for (a benchmark, not a test).

Run it alone: ``.venv/bin/python bench/claims.py`` (``--quick`` for a smoke run). It uses
``DATABASE_URL`` (else the embedded server, through settings) and, there, two endpoints of its
own (``bench-claims-empty`` and ``bench-claims-busy``); it deletes their todos except the
backlog, so give it a database of its own, e.g. ``sb_claims_bench``.

The busy endpoint holds ``--backlog`` pending todos (1,000,000 by default) on three other queues,
all older than anything the claims take: the worst case for a claim that walks the endpoint in
claim order. They are loaded by one ``INSERT … SELECT generate_series`` and kept between runs
(a later run with the same ``--backlog`` reuses them; a different one reloads). The empty
endpoint holds nothing but what the claims take.

Each run then gives both endpoints ``--claims`` fresh pending todos on the queue ``work`` and
times, through ``todos.lifecycle`` (Django's connection, the product's settings, prepared after
five executions), calls alternating between the two endpoints so that the neighbours' load falls
on both alike:

- ``one queue``: ``claim_next(["work"])``, which takes the oldest todo (completed afterwards,
  untimed, so no lease piles up in front of the next claim);
- ``two queues``: ``claim_next(["work", "spare"])``, the several-queue arm (``spare`` is empty);
- ``idle poll``: ``claim_next(["idle"])``, a queue with nothing on it: no row.

It prints, per case, the p50 and p95 of each endpoint in milliseconds and the ratio of the p50s,
busy / empty, against the budget of 1.3 (docs/performance.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "switchboard.settings")

# The project's modules need settings configured first, hence the imports after setup().
import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from switchboard import credentials, embedded  # noqa: E402
from switchboard.models import Endpoint, Human  # noqa: E402
from todos import lifecycle  # noqa: E402

PREFIX = "bench-claims"
BUDGET = 1.3  # p50 busy / p50 empty, at most
WORK = "work"
BACKLOG_QUEUES = ("bulk-a", "bulk-b", "bulk-c")
OWNER = "bench-claims"
WARMUP = 10  # calls per case and endpoint, past psycopg's prepare threshold (5)

# The backlog in one statement: ids are md5 hex with 0/1/8/9 mapped to w/x/y/z (todos_id_check
# wants '^td_[a-z2-7]{20}$'), unique per (nonce, i); spread over the backlog queues, a day old,
# 1 ms apart, sized like a webhook-made todo. Every 7th has a priority (1..3) and every 11th a
# not_before a day ahead, so the claim index's priority order and the deferred rows the scan
# steps over are both in the figures (docs/decisions/0027-time-and-cancellation.md).
LOAD = """
INSERT INTO todos (id, endpoint_id, queue, title, payload, work_order, created_at, updated_at,
                   priority, not_before)
SELECT 'td_' || substr(translate(md5(%(nonce)s || ':' || i), '0189', 'wxyz'), 1, 20),
       %(endpoint_id)s, (%(queues)s::text[])[1 + i %% cardinality(%(queues)s::text[])],
       'backlog ' || i,
       jsonb_build_object('n', i, 'repo', 'stump/switchboard', 'detail', repeat('x', 200)),
       repeat('Fix the failing check, push, and report back. ', 4),
       now() - interval '1 day' + i * interval '1 millisecond', now(),
       CASE WHEN i %% 7 = 0 THEN 1 + i %% 3 ELSE 0 END,
       CASE WHEN i %% 11 = 0 THEN now() + interval '1 day' END
  FROM generate_series(1, %(n)s) AS i
"""
# The todos the claims take: newer than the backlog, 1 ms apart.
WORK_TODOS = """
INSERT INTO todos (id, endpoint_id, queue, title, created_at, updated_at)
SELECT 'td_' || substr(translate(md5(%(nonce)s || ':' || i), '0189', 'wxyz'), 1, 20),
       %(endpoint_id)s, %(queue)s, 'work ' || i, now() + i * interval '1 millisecond', now()
  FROM generate_series(1, %(n)s) AS i
"""


def endpoint(slug: str) -> uuid.UUID:
    """One of the benchmark's endpoints (kept between runs)."""
    human, _ = Human.objects.get_or_create(username=PREFIX, defaults={"is_active": False})
    found = Endpoint.objects.filter(slug=slug).first()
    if found is None:
        # Its key is never used: the benchmark calls the lifecycle directly.
        found, _, _ = credentials.create_endpoint(
            human, name=slug, slug=slug, verbs=["claim_next", "complete"]
        )
    return found.id


def prepare(empty: uuid.UUID, busy: uuid.UUID, backlog: int, claims: int) -> None:
    """The busy endpoint's backlog (reused when it is already there), and fresh work todos."""
    with connection.cursor() as cur:
        cur.execute(
            "DELETE FROM todos WHERE endpoint_id = ANY(%s) AND NOT queue = ANY(%s)",
            [[empty, busy], list(BACKLOG_QUEUES)],
        )
        cur.execute(
            "SELECT count(*) FROM todos WHERE endpoint_id = %s AND state = 'pending'", [busy]
        )
        row = cur.fetchone()
        have = int(row[0]) if row else 0
        if have != backlog:
            print(f"loading {backlog:,} pending todos on the busy endpoint…", file=sys.stderr)
            started = time.monotonic()
            cur.execute("DELETE FROM todos WHERE endpoint_id = %s", [busy])
            cur.execute(
                LOAD,
                {
                    "nonce": uuid.uuid4().hex,
                    "endpoint_id": busy,
                    "queues": list(BACKLOG_QUEUES),
                    "n": backlog,
                },
            )
            print(f"  loaded in {time.monotonic() - started:.0f} s", file=sys.stderr)
        for ep in (empty, busy):
            cur.execute(
                WORK_TODOS,
                {"nonce": uuid.uuid4().hex, "endpoint_id": ep, "queue": WORK, "n": claims},
            )
    with connection.cursor() as cur:
        # Statistics and a visibility map as a settled table would have.
        cur.execute("VACUUM (ANALYZE) todos")


def claim_and_complete(endpoint_id: uuid.UUID, queues: list[str]) -> Callable[[], float]:
    """A timed claim_next on ``queues`` (which must take a todo), then an untimed complete."""

    def run() -> float:
        started = time.perf_counter()
        result = lifecycle.claim_next(endpoint_id, queues, owner=OWNER, claimant=PREFIX)
        elapsed = time.perf_counter() - started
        if result is None:
            raise SystemExit(f"nothing to claim on {queues}: raise --claims")
        lifecycle.complete(endpoint_id, result.todo.id, owner=OWNER)
        return elapsed

    return run


def idle_poll(endpoint_id: uuid.UUID) -> Callable[[], float]:
    def run() -> float:
        started = time.perf_counter()
        result = lifecycle.claim_next(endpoint_id, ["idle"], owner=OWNER, claimant=PREFIX)
        elapsed = time.perf_counter() - started
        if result is not None:
            raise SystemExit("the idle queue had a todo")
        return elapsed

    return run


def measure(
    empty: Callable[[], float], busy: Callable[[], float], n: int
) -> tuple[list[float], list[float]]:
    """``n`` calls of each, alternating, after a warm-up; seconds per call."""
    for _ in range(WARMUP):
        empty()
        busy()
    times_empty, times_busy = [], []
    for i in range(n):
        # Alternate which goes first, so neither always follows the other.
        if i % 2:
            times_empty.append(empty())
            times_busy.append(busy())
        else:
            times_busy.append(busy())
            times_empty.append(empty())
    return times_empty, times_busy


def _p(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else "")
    parser.add_argument(
        "--backlog", type=int, default=1_000_000, help="pending todos on other queues (1000000)"
    )
    parser.add_argument("--claims", type=int, default=1000, help="timed calls per case (1000)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 20,000 backlog, 50 calls")
    args = parser.parse_args(argv)
    if args.quick:
        args.backlog, args.claims = 20_000, 50

    embedded.ensure_running()  # DATABASE_URL unset: settings only describe the server
    empty, busy = endpoint(f"{PREFIX}-empty"), endpoint(f"{PREFIX}-busy")
    # Two claiming cases take a todo each per call, plus their warm-ups.
    prepare(empty, busy, args.backlog, 2 * (args.claims + WARMUP))

    load1, load5, _ = os.getloadavg()
    with connection.cursor() as cur:
        cur.execute("SELECT current_setting('server_version')")
        row = cur.fetchone()
    print(f"bench/claims.py  {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    print(
        f"PostgreSQL {row[0] if row else '?'}; {os.cpu_count()} CPUs, load {load1:.2f}/{load5:.2f};"
        f" {args.backlog:,} pending todos on {len(BACKLOG_QUEUES)} other queues of the busy"
        f" endpoint; {args.claims} timed calls per case and endpoint, alternating"
    )
    cases = (
        ("one queue", claim_and_complete(empty, [WORK]), claim_and_complete(busy, [WORK])),
        (
            "two queues",
            claim_and_complete(empty, [WORK, "spare"]),
            claim_and_complete(busy, [WORK, "spare"]),
        ),
        ("idle poll", idle_poll(empty), idle_poll(busy)),
    )
    print()
    print(
        f"{'claim_next':<12}{'empty p50':>11}{'p95':>8}{'busy p50':>11}{'p95':>8}"
        f"{'busy/empty p50':>17}"
    )
    worst = 0.0
    for name, on_empty, on_busy in cases:
        times_empty, times_busy = measure(on_empty, on_busy, args.claims)
        ratio = statistics.median(times_busy) / statistics.median(times_empty)
        worst = max(worst, ratio)
        print(
            f"{name:<12}{_p(times_empty, 0.5):>9.2f}ms{_p(times_empty, 0.95):>6.2f}ms"
            f"{_p(times_busy, 0.5):>9.2f}ms{_p(times_busy, 0.95):>6.2f}ms{ratio:>17.2f}"
        )
    verdict = "met" if worst <= BUDGET else "NOT met"
    print()
    print(f"worst busy/empty p50 ratio {worst:.2f}: budget <= {BUDGET}: {verdict}")
    load1, load5, _ = os.getloadavg()
    print(f"load at the end {load1:.2f}/{load5:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
