"""Benchmark the Board's Overview page against its budget (a benchmark, not a test).

Run it alone: ``.venv/bin/python bench/overview.py`` (``--quick`` for a smoke run). It uses
``DATABASE_URL`` (else the embedded server, through settings), TRUNCATEs ``todos`` (and with
them ``todo_attempts``) and the Overview's rollup tables there, and replaces its own
``bench-overview-*`` humans and endpoints, so point it at a database of its own.

What it seeds, with ``generate_series`` (two statements, no Python loop over rows): ``--todos``
todos (1,000,000 by default) created evenly over the last day, on ``--endpoints`` endpoints of
the operator (three queues each) and as many of ``--others`` other humans, one in five todos
theirs. Of the older 95 %, each has one ended attempt, claim waits of 0 to 100 s and run times
of 0 to 300 s: 94 % completed, 5 % dead letters, 1 % failed with a retry scheduled; of the
newest 5 %, two in five are claimed (an open attempt) and the rest pending.

Then it times, in this process:

- the sweeper's step (``todos.overview.roll_up``) on its first pass, which computes the whole
  day from the attempts, and on a steady pass after it (the settle window, the depth sample);
- ``--requests`` GETs of ``/overview/`` as the operator through Django's test client (the whole
  request: middleware, session, the reads, the template; no network), after a warm-up, and
  prints the median and the 95th percentile in milliseconds against the budget
  (docs/performance.md) and the page's query count.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "switchboard.settings")

# The project's modules need settings configured first, hence the imports after setup().
import django  # noqa: E402

django.setup()

from django.contrib.auth.hashers import make_password  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from bench.timing import p95, timed  # noqa: E402
from switchboard import credentials  # noqa: E402
from switchboard.models import Endpoint, Human  # noqa: E402
from todos import overview  # noqa: E402

PREFIX = "bench-overview"
BUDGET_MS = 200.0
QUEUES = ["build", "deploy", "triage"]

# Ids are md5 hex with 0/1/8/9 mapped to w/x/y/z (todos_id_check: '^td_[a-z2-7]{20}$'), unique
# per (nonce, i). Todo i is created (n - i) / n of a day ago; its wait and run come from i.
SEED_TODOS = """
INSERT INTO todos (id, endpoint_id, queue, title, payload, state, owner, lease_expires_at,
                   attempt, attempts_total, claimed_at, next_retry_at, created_at, updated_at,
                   finished_at)
SELECT 'td_' || substr(translate(md5(%(nonce)s || ':' || i), '0189', 'wxyz'), 1, 20),
       CASE WHEN i %% 5 = 0
            THEN (%(others)s::uuid[])[1 + (i / 5) %% cardinality(%(others)s::uuid[])]
            ELSE (%(mine)s::uuid[])[1 + i %% cardinality(%(mine)s::uuid[])] END,
       (%(queues)s::text[])[1 + (i / 7) %% cardinality(%(queues)s::text[])],
       'Check ' || i, jsonb_build_object('n', i),
       s.state,
       CASE WHEN s.state IN ('pending') THEN NULL ELSE 'bench-agent' END,
       CASE WHEN s.state = 'claimed' THEN now() + interval '10 minutes' END,
       CASE WHEN s.state = 'pending' THEN 0 ELSE 1 END,
       CASE WHEN s.state = 'pending' THEN 0 ELSE 1 END,
       CASE WHEN s.state = 'claimed' THEN c.created + c.wait END,
       CASE WHEN s.retry THEN now() + interval '1 hour' END,
       c.created, now(),
       CASE WHEN s.state = 'completed' OR (s.state = 'failed' AND NOT s.retry)
            THEN c.created + c.wait + c.run END
  FROM generate_series(1, %(n)s) AS i
 CROSS JOIN LATERAL (
        SELECT now() - interval '1 day' * (%(n)s - i) / %(n)s AS created,
               ((i::bigint * 7919) %% 1000) / 10.0 * interval '1 second' AS wait,
               ((i::bigint * 104729) %% 3000) / 10.0 * interval '1 second' AS run) c
 CROSS JOIN LATERAL (
        SELECT CASE WHEN i > %(n)s * 0.97 THEN 'pending'
                    WHEN i > %(n)s * 0.95 THEN 'claimed'
                    WHEN i %% 100 < 6 THEN 'failed'
                    ELSE 'completed' END AS state,
               i <= %(n)s * 0.95 AND i %% 100 = 5 AS retry) s
"""

# One attempt per claimed todo: ended (completed, failed) unless the todo is still claimed.
SEED_ATTEMPTS = """
INSERT INTO todo_attempts (todo_id, endpoint_id, seq, attempt, claimer_kind, claimer_endpoint_id,
                           owner, claimant, claimed_at, last_heartbeat_at, lease_expires_at,
                           ended_at, outcome, disposition)
SELECT t.id, t.endpoint_id, 1, 1, 'endpoint', t.endpoint_id, 'bench-agent', 'bench/run',
       coalesce(t.claimed_at, t.finished_at - r.run, now() - interval '1 hour'),
       NULL, coalesce(t.lease_expires_at, t.finished_at, now()),
       CASE WHEN t.state = 'claimed' THEN NULL ELSE coalesce(t.finished_at, now()
            - interval '1 hour') END,
       CASE t.state WHEN 'claimed' THEN NULL WHEN 'completed' THEN 'completed' ELSE 'failed' END,
       CASE WHEN t.state = 'claimed' THEN NULL WHEN t.state = 'completed' THEN 'done'
            WHEN t.next_retry_at IS NOT NULL THEN 'retry_scheduled' ELSE 'dead_lettered' END
  FROM todos t
 CROSS JOIN LATERAL (
        SELECT ((substr(t.title, 7)::bigint * 104729) %% 3000) / 10.0 * interval '1 second'
               AS run) r
 WHERE t.state <> 'pending'
"""


def _human(username: str) -> Human:
    human, _ = Human.objects.get_or_create(
        username=username, defaults={"password": make_password(None)}
    )
    return human


def _endpoint(owner: Human, slug: str) -> Any:
    endpoint = Endpoint.objects.filter(slug=slug).first()
    if endpoint is None:
        endpoint, _, _ = credentials.create_endpoint(owner, name=slug, slug=slug, verbs=[])
    return endpoint.id


def seed(args: argparse.Namespace) -> Human:
    """Replace the bench's rows; return the operator."""
    with connection.cursor() as cur:
        cur.execute("TRUNCATE todos CASCADE")
        cur.execute("TRUNCATE overview_minutes, overview_hours, overview_marks")
    # Humans and endpoints are kept from run to run (endpoints are never deleted: their only
    # writer, switchboard/credentials.py, revokes instead); the bench makes the missing ones.
    operator = _human(f"{PREFIX}-operator")
    mine = [_endpoint(operator, f"{PREFIX}-{n}") for n in range(args.endpoints)]
    others = [
        _endpoint(_human(f"{PREFIX}-other-{n}"), f"{PREFIX}-other-{n}") for n in range(args.others)
    ]
    params = {
        "nonce": uuid.uuid4().hex,
        "mine": mine,
        "others": others,
        "queues": QUEUES,
        "n": args.todos,
    }
    started = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute(SEED_TODOS, params)
        cur.execute(SEED_ATTEMPTS, params)
        cur.execute("VACUUM (ANALYZE) todos, todo_attempts, endpoints, humans")
        cur.execute("SELECT count(*) FROM todo_attempts")
        (attempts,) = cur.fetchone() or (0,)
    print(
        f"seeded {args.todos:,} todos, {attempts:,} attempts on {len(mine)} + {len(others)}"
        f" endpoints ({len(QUEUES)} queues each) in {time.perf_counter() - started:.1f} s"
    )
    return operator


def once(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else "")
    parser.add_argument("--todos", type=int, default=1_000_000, help="todos (1000000)")
    parser.add_argument("--endpoints", type=int, default=3, help="the operator's (3)")
    parser.add_argument("--others", type=int, default=3, help="other humans' endpoints (3)")
    parser.add_argument("--requests", type=int, default=50, help="timed GETs (50)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 20,000 todos, 10 GETs")
    args = parser.parse_args(argv)
    if args.quick:
        args.todos, args.requests = 20_000, 10

    operator = seed(args)
    first = once(overview.roll_up)
    steady = once(overview.roll_up)
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM overview_minutes")
        (minutes,) = cur.fetchone() or (0,)
        cur.execute("SELECT pg_total_relation_size('overview_minutes')")
        (size,) = cur.fetchone() or (0,)
    print(
        f"rollup: first pass (the whole day) {first:,.0f} ms, a steady pass {steady:,.0f} ms;"
        f" {minutes:,} minute rows, {size / 1024 / 1024:.1f} MiB"
    )
    sample = timed(lambda: overview.fetch_all(overview.SAMPLE, {}), 5)
    print(f"the depth sample alone: median {statistics.median(sample):.0f} ms")

    client = Client(SERVER_NAME="localhost")
    client.force_login(operator)

    def page() -> object:
        response = client.get("/overview/")
        assert response.status_code == 200, response.status_code
        assert b'data-chart="throughput-day"' in response.content
        return response

    samples = timed(page, args.requests)
    with CaptureQueriesContext(connection) as captured:
        page()
    median = statistics.median(samples)
    verdict = "met" if median <= BUDGET_MS else "NOT met"
    print(f"\n{'page':<10} {'median ms':>10} {'p95 ms':>8} {'budget':>8} {'queries':>8}  verdict")
    print(
        f"{'/overview/':<10} {median:>10.1f} {p95(samples):>8.1f} {BUDGET_MS:>7.0f}"
        f" {len(captured.captured_queries):>8}  {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
