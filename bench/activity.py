"""Benchmark the trail page and the Activity feed against their budgets (a benchmark, not a test).

Run it alone: ``.venv/bin/python bench/activity.py`` (``--quick`` for a smoke run). It uses
``DATABASE_URL`` (else the embedded server, through settings), TRUNCATEs ``todos`` (and with
them ``todo_attempts`` and ``todo_activity``) there and replaces its own ``bench-activity-*``
humans and endpoints, so point it at a database of its own.

What it seeds, with ``generate_series`` (a few statements, no Python loop over rows):

- the feed's history: ``--owners`` humans with one endpoint each, ``--todos`` completed todos
  spread evenly over them and over 30 days, each with two ended attempts (twice ``--todos``
  attempt endings) and ``--rows-per-todo`` activity rows (notes of both attempts, a Board
  action, the sweeper's requeue and a ring), interleaved in time across owners, so a human's
  page passes every other owner's rows on its way, as on a shared server;
- a human with ``--few`` todos of that history on an endpoint of their own (their entries
  spread over the 30 days among the busy owners'), and a human with an endpoint and nothing
  in the feed at all: the feed's worst case before rows carried their endpoint;
- the trail: one more todo of the first owner with ``--trail-attempts`` attempts and
  ``--trail-rows`` activity rows spread over them.

Then it times, in this process through Django's test client (the whole request: middleware,
session, the reads, the template; no network), ``--requests`` GETs of each page as the first
owner, after a warm-up, and prints the median and the 95th percentile in milliseconds against
the budget (docs/performance.md), each page's query count, and the feed's read alone; then the
feed's read and the rail's count for the human with a few entries and for the one with none,
against the budget of a page of one's own rows (docs/decisions/0039-feed-by-endpoint.md).
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
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# This file is named activity.py: run as a script, its directory heads sys.path and would shadow
# the project's ``activity`` app. Drop it, and put the project root there instead.
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != HERE]
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

from activity import feed  # noqa: E402
from bench.timing import p95, timed  # noqa: E402
from switchboard import credentials, teams  # noqa: E402
from switchboard.models import Endpoint, Human, Team, TeamMember  # noqa: E402

PREFIX = "bench-activity"
BUDGET_MS = {"trail": 100.0, "spans": 150.0, "feed": 30.0}
# The feed's read (and the rail's count) for a human with few entries or none among the busy
# owners' million rows: bounded by their own rows (docs/decisions/0039-feed-by-endpoint.md).
SPARSE_BUDGET_MS = 50.0

# Ids are md5 hex with 0/1/8/9 mapped to w/x/y/z, which satisfies todos_id_check
# ('^td_[a-z2-7]{20}$') and is unique per (nonce, i). Todo i belongs to owner i % owners and is
# created (n - i) minutes back from now scaled into 30 days, so the owners' rows interleave.
SEED_TODOS = """
INSERT INTO todos (id, endpoint_id, queue, title, payload, state, attempt, attempts_total,
                   activity_seq, created_at, updated_at, finished_at)
SELECT 'td_' || substr(translate(md5(%(nonce)s || ':' || i), '0189', 'wxyz'), 1, 20),
       (%(endpoints)s::uuid[])[1 + i %% %(owners)s], 'ci-fix', 'Fix check ' || i,
       jsonb_build_object('n', i, 'repo', 'example/shop'), 'completed', 2, 2, %(rows)s,
       now() - interval '30 days' * (%(n)s - i) / %(n)s - interval '1 hour',
       now(), now() - interval '30 days' * (%(n)s - i) / %(n)s
  FROM generate_series(1, %(n)s) AS i
"""

# Two attempts per todo: the first failed (a retry was scheduled), the second completed.
SEED_ATTEMPTS = """
INSERT INTO todo_attempts (todo_id, endpoint_id, seq, attempt, claimer_kind, claimer_endpoint_id,
                           owner, claimant, claimed_at, last_heartbeat_at, lease_expires_at,
                           ended_at, outcome, disposition, summary)
SELECT t.id, t.endpoint_id, s, s, 'endpoint', t.endpoint_id, 'bench-agent', 'bench/run-' || s,
       t.created_at + (s * 10) * interval '1 minute',
       t.created_at + (s * 10 + 2) * interval '1 minute',
       t.created_at + (s * 10 + 5) * interval '1 minute',
       t.created_at + (s * 10 + 4) * interval '1 minute',
       CASE s WHEN 1 THEN 'failed' ELSE 'completed' END,
       CASE s WHEN 1 THEN 'retry_scheduled' ELSE 'done' END,
       CASE s WHEN 1 THEN 'the suite is red on main' ELSE 'fixed and pushed' END
  FROM todos t CROSS JOIN generate_series(1, 2) AS s
 WHERE t.endpoint_id = ANY(%(endpoints)s::uuid[])
"""

# rows-per-todo activity rows, seq 1..k, k = rows: a ring before the first claim, notes in
# both attempts, the sweeper's requeue between them, a Board action at the end.
SEED_ACTIVITY = """
INSERT INTO todo_activity (todo_id, endpoint_id, seq, attempt_seq, at, kind, actor_kind,
                           actor_ref, message, detail)
SELECT t.id, t.endpoint_id, k,
       CASE WHEN k = 1 OR k = %(rows)s / 2 + 1 THEN NULL
            WHEN k <= %(rows)s / 2 THEN 1 ELSE 2 END,
       t.created_at + k * interval '1 minute' + interval '30 seconds',
       CASE WHEN k = 1 THEN 'rung' WHEN k = %(rows)s / 2 + 1 THEN 'retried'
            WHEN k = %(rows)s THEN 'human_action' ELSE 'note' END,
       CASE WHEN k = 1 OR k = %(rows)s / 2 + 1 THEN 'system'
            WHEN k = %(rows)s THEN 'human' ELSE 'endpoint' END,
       CASE WHEN k = 1 THEN 'doorbell' WHEN k = %(rows)s / 2 + 1 THEN 'sweeper'
            WHEN k = %(rows)s THEN 'human:' || %(human_id)s ELSE 'bench-agent' END,
       CASE WHEN k IN (1, %(rows)s / 2 + 1) THEN NULL
            ELSE 'step ' || k || ': ran the failing test again' END,
       CASE WHEN k = 1 THEN '{"subscribers": 1}'::jsonb
            WHEN k = %(rows)s / 2 + 1 THEN '{"from": "failed", "to": "pending"}'::jsonb
            WHEN k = %(rows)s THEN '{"action": "extend", "from": "claimed", "to": "claimed"}'
            ELSE '{}'::jsonb END
  FROM todos t CROSS JOIN generate_series(1, %(rows)s) AS k
 WHERE t.endpoint_id = ANY(%(endpoints)s::uuid[])
"""

# The trail's todo: `attempts` attempts a minute apart (all ended but the last) and `rows`
# notes spread over them in order.
SEED_TRAIL = """
WITH todo AS (
    INSERT INTO todos (id, endpoint_id, queue, title, payload, work_order, state, owner,
                       lease_expires_at, attempt, max_attempts, claimed_at, attempts_total,
                       activity_seq, created_at, updated_at)
    VALUES (%(id)s, %(endpoint_id)s, 'ci-fix', 'The trail under test',
            '{"repo": "example/shop", "check": "test (3.12)"}',
            'Find out why the check fails and fix it.', 'claimed', 'bench-agent',
            now() + interval '5 minutes', %(attempts)s, 1000, now(), %(attempts)s, %(rows)s,
            now() - interval '1 day', now())
    RETURNING id, created_at
), attempts AS (
    INSERT INTO todo_attempts (todo_id, endpoint_id, seq, attempt, claimer_kind,
                               claimer_endpoint_id, owner, claimant, claimed_at,
                               last_heartbeat_at, lease_expires_at, ended_at, outcome,
                               disposition, summary)
    SELECT todo.id, %(endpoint_id)s, s, s, 'endpoint', %(endpoint_id)s, 'bench-agent',
           'bench/run-' || s,
           todo.created_at + s * interval '1 hour',
           todo.created_at + s * interval '1 hour' + interval '20 minutes',
           todo.created_at + s * interval '1 hour' + interval '50 minutes',
           CASE WHEN s < %(attempts)s THEN todo.created_at + s * interval '1 hour'
                                           + interval '30 minutes' END,
           CASE WHEN s < %(attempts)s THEN 'failed' END,
           CASE WHEN s < %(attempts)s THEN 'retry_scheduled' END,
           CASE WHEN s < %(attempts)s THEN 'still red after run ' || s END
      FROM todo CROSS JOIN generate_series(1, %(attempts)s) AS s
)
INSERT INTO todo_activity (todo_id, endpoint_id, seq, attempt_seq, at, kind, actor_kind, actor_ref,
                           message)
SELECT todo.id, %(endpoint_id)s, k, 1 + (k - 1) * %(attempts)s / %(rows)s,
       todo.created_at + (1 + (k - 1) * %(attempts)s / %(rows)s) * interval '1 hour'
                       + ((k - 1) %% (%(rows)s / %(attempts)s) + 1) * interval '1 minute',
       'note', 'endpoint', 'bench-agent', 'note ' || k || ': bisecting the failing commit'
  FROM todo CROSS JOIN generate_series(1, %(rows)s) AS k
"""


# The spans of the second trail todo: `spans` of them spread evenly over its attempts, in a
# two-level tree (each attempt's first span the root of the others), categories in turn.
SEED_SPANS = """
INSERT INTO todo_spans (todo_id, trace_id, span_id, parent_span_id, attempt_seq, name, kind,
                        category, tool, status_code, start_at, end_at, attributes)
SELECT t.id, decode(md5(t.id || a.seq), 'hex'),
       substr(decode(md5(t.id || a.seq || '-' || k), 'hex'), 1, 8),
       CASE WHEN k > 1 THEN substr(decode(md5(t.id || a.seq || '-1'), 'hex'), 1, 8) END,
       a.seq, (ARRAY['chat claude', 'execute_tool bash', 'retrieve docs'])[1 + k %% 3],
       'internal', (ARRAY['llm', 'tool', 'retrieval'])[1 + k %% 3],
       CASE WHEN k %% 3 = 1 THEN 'bash' END, 'ok',
       a.claimed_at + k * interval '100 ms', a.claimed_at + k * interval '100 ms'
                                             + interval '80 ms',
       jsonb_build_object('gen_ai.usage.input_tokens', 100, 'gen_ai.usage.output_tokens', 20)
  FROM todos t
  JOIN todo_attempts a ON a.todo_id = t.id
 CROSS JOIN generate_series(1, %(per_attempt)s) AS k
 WHERE t.id = %(id)s
"""


def _human(username: str) -> Human:
    human, _ = Human.objects.get_or_create(
        username=username, defaults={"password": make_password(None)}
    )
    return human


def _endpoint(owner: Human, slug: str, name: str) -> Any:
    endpoint = Endpoint.objects.filter(slug=slug).first()
    if endpoint is None:
        endpoint, _, _ = credentials.create_endpoint(owner, name=name, slug=slug, verbs=[])
    return endpoint.id


def _team(owners: list[Human], quiet: Human, *, joined: bool) -> None:
    """The team ``bench-activity-team`` (its standing admin the quiet human) owns the second
    owner's endpoint; the first owner is its member only with ``--team``, so its scope is then
    two endpoints, one through the membership (docs/decisions/0034-teams.md)."""
    if len(owners) < 2:
        return
    team = Team.objects.filter(name=f"{PREFIX}-team").first() or teams.create_team(
        f"{PREFIX}-team", quiet
    )
    second = Endpoint.objects.get(slug=f"{PREFIX}-1")
    if second.team_id != team.pk:
        credentials.move_endpoint(second, team, by=None)
    member = TeamMember.objects.filter(team=team, human=owners[0]).exists()
    if joined and not member:
        teams.add_member(team, owners[0])
    elif member and not joined:
        teams.remove_member(team, owners[0])


def seed(args: argparse.Namespace) -> tuple[Human, Human, Human, str, str]:
    """Replace the bench's rows; return the first owner, the human with a few entries, the
    human with none, and the trail's two todo ids."""
    with connection.cursor() as cur:
        cur.execute("TRUNCATE todos CASCADE")
    # Humans and endpoints are kept from run to run (endpoints are never deleted: their only
    # writer, switchboard/credentials.py, revokes instead); the bench makes the missing ones.
    owners = [_human(f"{PREFIX}-{n}") for n in range(args.owners)]
    endpoint_ids = [
        _endpoint(owner, f"{PREFIX}-{n}", f"Bench {n}") for n, owner in enumerate(owners)
    ]
    quiet = _human(f"{PREFIX}-quiet")
    _endpoint(quiet, f"{PREFIX}-quiet", "Quiet")
    _team(owners, quiet, joined=args.team)
    # Neither is in a team: their scope is their own endpoint. (The quiet human above is the
    # team's admin, so the second owner's rows are in their feed.)
    few = _human(f"{PREFIX}-few")
    few_endpoint = _endpoint(few, f"{PREFIX}-few", "Few")
    empty = _human(f"{PREFIX}-empty")
    _endpoint(empty, f"{PREFIX}-empty", "Empty")
    nonce = uuid.uuid4().hex
    trail_id = "td_" + "".join("wxyz"[int(c, 16) % 4] for c in nonce[:20])
    spans_id = "td_" + "".join("wxyz"[int(c, 16) % 4] for c in nonce[12:32])
    params = {
        "nonce": nonce,
        "endpoints": endpoint_ids,
        "owners": args.owners,
        "n": args.todos,
        "rows": args.rows_per_todo,
        "human_id": owners[0].id,
    }
    started = time.perf_counter()
    # The few human's todos spread over the same 30 days, with the same rows each.
    few_params = {
        **params,
        "nonce": nonce + "-few",
        "endpoints": [few_endpoint],
        "owners": 1,
        "n": args.few,
        "human_id": few.id,
    }
    with connection.cursor() as cur:
        for group in (params, few_params):
            cur.execute(SEED_TODOS, group)
            cur.execute(SEED_ATTEMPTS, group)
            cur.execute(SEED_ACTIVITY, group)
        for todo_id in (trail_id, spans_id):
            cur.execute(
                SEED_TRAIL,
                {
                    "id": todo_id,
                    "endpoint_id": endpoint_ids[0],
                    "attempts": args.trail_attempts,
                    "rows": args.trail_rows,
                },
            )
        cur.execute(
            SEED_SPANS,
            {"id": spans_id, "per_attempt": max(1, args.trail_spans // args.trail_attempts)},
        )
        cur.execute(
            "VACUUM (ANALYZE) todos, todo_attempts, todo_activity, todo_spans, endpoints, humans"
        )
        cur.execute("SELECT count(*) FROM todo_activity")
        (rows,) = cur.fetchone() or (0,)
        cur.execute("SELECT count(*) FROM todo_attempts WHERE ended_at IS NOT NULL")
        (ended,) = cur.fetchone() or (0,)
    print(
        f"seeded {args.owners} owners, {args.todos + args.few + 2:,} todos, {rows:,} activity"
        f" rows, {ended:,} attempt endings in {time.perf_counter() - started:.1f} s"
    )
    return owners[0], few, empty, trail_id, spans_id


def get(client: Client, path: str) -> Callable[[], object]:
    def call() -> object:
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code)
        return response

    return call


def queries(call: Callable[[], object]) -> int:
    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured.captured_queries)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else "")
    parser.add_argument("--owners", type=int, default=50, help="humans, one endpoint each (50)")
    parser.add_argument("--todos", type=int, default=100_000, help="feed todos (100000)")
    parser.add_argument(
        "--rows-per-todo", type=int, default=10, help="activity rows per feed todo (10)"
    )
    parser.add_argument("--trail-attempts", type=int, default=20, help="the trail's (20)")
    parser.add_argument("--trail-rows", type=int, default=500, help="the trail's rows (500)")
    parser.add_argument(
        "--trail-spans", type=int, default=2_000, help="spans on the second trail (2000)"
    )
    parser.add_argument(
        "--few", type=int, default=3, help="todos of the human with a few entries (3)"
    )
    parser.add_argument("--requests", type=int, default=50, help="timed GETs per page (50)")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 2,000 feed todos, 10 requests"
    )
    parser.add_argument(
        "--team",
        action="store_true",
        help="the first owner also sees the second owner's endpoint, through a team",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.todos, args.requests = 2_000, 10

    owner, few, empty, trail_id, spans_id = seed(args)
    # The test client speaks to the product as configured; only its host must be allowed.
    client = Client(SERVER_NAME="localhost")
    client.force_login(owner)
    pages = {
        "trail": get(client, f"/todos/{trail_id}"),
        "spans": get(client, f"/todos/{spans_id}"),
        "feed": get(client, "/activity/"),
    }

    print(f"\n{'page':<8} {'median ms':>10} {'p95 ms':>8} {'budget':>8} {'queries':>8}  verdict")
    for name, call in pages.items():
        samples = timed(call, args.requests)
        median = statistics.median(samples)
        verdict = "met" if median <= BUDGET_MS[name] else "NOT met"
        print(
            f"{name:<8} {median:>10.1f} {p95(samples):>8.1f} {BUDGET_MS[name]:>7.0f}"
            f" {queries(call):>8}  {verdict}"
        )
    read = timed(lambda: feed.feed_page(owner.id), args.requests)
    print(f"\nthe feed's read alone (feed.feed_page): median {statistics.median(read):.1f} ms")
    since = owner.date_joined - dt.timedelta(days=40)
    count = timed(lambda: feed.unread_count(owner.id, since), args.requests)
    print(
        "the rail's count, nothing seen for 40 days (feed.unread_count):"
        f" median {statistics.median(count):.1f} ms"
    )
    # The feed's old worst case: a human with few entries or none among the busy owners. Each
    # arm walks only the human's endpoint's rows, so both are bounded by their own history.
    print(f"\n{'sparse human':<28} {'median ms':>10} {'p95 ms':>8} {'budget':>8}  verdict")
    for human in (few, empty):
        entries = len(feed.feed_page(human.id, size=10_000).entries)
        since = human.date_joined - dt.timedelta(days=40)
        for what, call in (
            ("feed_page", lambda human=human: feed.feed_page(human.id)),
            ("unread_count", lambda human=human, since=since: feed.unread_count(human.id, since)),
        ):
            samples = timed(call, args.requests)
            median = statistics.median(samples)
            verdict = "met" if median <= SPARSE_BUDGET_MS else "NOT met"
            label = f"{entries} entries, {what}"
            print(
                f"{label:<28} {median:>10.2f} {p95(samples):>8.2f} {SPARSE_BUDGET_MS:>7.0f}"
                f"  {verdict}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
