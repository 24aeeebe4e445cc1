"""The Overview page's rollups: kept by the sweeper, read by the Board's ``/overview/``.

Why rollups, their grain and their cost: docs/decisions/0017-overview-rollups.md.

The sweeper's step (``roll_up``, under the advisory lock ``todos.sweeps.LOCK_OVERVIEW``, at
most once per ``EVERY_SECONDS`` per process):

1. samples the queues' depth (``todos/sql/overview_sample.sql``) into this minute's row;
2. recomputes, from ``todo_attempts``, every minute from the high-water mark (less
   ``SETTLE_MINUTES``, so a transition that committed late is still counted) to now
   (``overview_minutes.sql``), an hour of minutes per statement;
3. recomputes the hours those minutes fall in from the minute rows (``overview_hours.sql``);
4. moves the mark, and prunes rows older than ``KEEP_HOURS``.

Every write *replaces* a row's numbers with ones computed from the source rows, never adds to
them, so a step run twice, or by two sweepers at once, leaves the same numbers: the lock only
saves the second sweeper the work (and two upserts of the same rows from waiting on each other).
Each statement is its own transaction, as every sweep's batch is.

Claim wait and run time are kept as histograms of ``BUCKETS`` buckets, ``PER_OCTAVE`` to a
doubling from ``FLOOR_SECONDS`` (bucket 1 holds everything below it, the last everything above
its lower edge), so they add across minutes and hours. A percentile is the bucket holding the
ceil(p·n)-th value, shown as the bucket's geometric middle: within ``2 ** (1 / (2 *
PER_OCTAVE))`` (about 9 %) of the exact value inside the range. Both count the attempts that
ended completed or failed (reported, or died with their lease) in the window, by the minute
they ended in; the claim wait only of first attempts (a retry's wait would count its
predecessors' runs).

The reads (``overview``) are owner-scoped like those of ``todos.queries``: they start from the
scope's endpoints, so a foreign queue is never read. Besides the rollups, a page reads the live
depth (``overview_live.sql``: at most ``LIVE_CAP`` unfinished todos per endpoint, so a new queue
shows before the sweeper samples it; with each queue's open pause, so a paused queue's waiting
todos are not read as a stuck agent) and the cost per queue (``overview_cost.sql``, of the OTLP
ingest's ``usage_hours``; docs/decisions/0036-cost-and-budgets.md).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

from switchboard import actors
from switchboard.lib.actors import Actor
from switchboard.lib.sql import fetch_all, fetch_one, load
from switchboard.scope import ENDPOINT_ENDPOINTS_SQL, HUMAN_ENDPOINTS_SQL, Scope
from todos.types import PauseWhy

BUCKETS = 100
FLOOR_SECONDS = 0.1
PER_OCTAVE = 4
# The sweeper samples and recomputes at most this often (per process): the page's "now". The
# sample scans the unfinished todos and dead letters (0.3-0.5 s at a million todos, cold),
# so not every pass (docs/decisions/0017-overview-rollups.md).
EVERY_SECONDS = 30.0
# Minutes recomputed again on every pass, behind the mark: a statement's ended_at is its
# transaction's start, so a transition committing later than this after it began is missed.
SETTLE_MINUTES = 3
CHUNK_MINUTES = 60
# On the first pass (no mark), the minutes of the last day are computed from the attempts.
BACKFILL_MINUTES = 24 * 60
KEEP_HOURS = 48

_SQL = Path(__file__).parent / "sql"
# The live read counts at most this many unfinished todos per endpoint (overview_live.sql).
LIVE_CAP = 5000


def bucket_sql(seconds: str) -> str:
    """The SQL bucket number (1-based) of the float8 expression ``seconds``."""
    return (
        f"(CASE WHEN {seconds} < {FLOOR_SECONDS} THEN 1"
        f" ELSE least({BUCKETS}, 2 + floor({PER_OCTAVE} * ln(({seconds}) / {FLOOR_SECONDS})"
        " / ln(2))::int) END)"
    )


def _hist_sql(keys: str) -> str:
    """The int[] histogram of ``BUCKETS`` counts of the bucket numbers in the int[] ``keys``."""
    return (
        f"(CASE WHEN {keys} IS NULL THEN NULL ELSE"
        " (SELECT array_agg(coalesce(c.n, 0)::int ORDER BY s.k)"
        f"    FROM generate_series(1, {BUCKETS}) AS s(k)"
        f"    LEFT JOIN (SELECT x AS k, count(*) AS n FROM unnest({keys}) AS x GROUP BY x) c"
        "     ON c.k = s.k) END)"
    )


def _epoch(interval: str) -> str:
    return f"EXTRACT(EPOCH FROM {interval})::float8"


SAMPLE = load(_SQL, "overview_sample")
MINUTES = load(
    _SQL,
    "overview_minutes",
    run_bucket=bucket_sql(_epoch("a.ended_at - a.claimed_at")),
    wait_bucket=bucket_sql(_epoch("a.claimed_at - t.created_at")),
    wait_hist=_hist_sql("g.waits"),
    run_hist=_hist_sql("g.runs"),
)
HOURS = load(_SQL, "overview_hours")
MARK = load(_SQL, "overview_mark")
MARK_SET = load(_SQL, "overview_mark_set")
PRUNE = load(_SQL, "overview_prune")


def bucket_of(seconds: float) -> int:
    """``bucket_sql`` in Python: the bucket a duration falls in (tests, the docs)."""
    if seconds < FLOOR_SECONDS:
        return 1
    return min(BUCKETS, 2 + math.floor(PER_OCTAVE * math.log2(seconds / FLOOR_SECONDS)))


def bucket_bounds(k: int) -> tuple[float, float]:
    """The durations bucket ``k`` holds, [low, high) in seconds (the last is open: high inf)."""
    if k <= 1:
        return 0.0, FLOOR_SECONDS
    low = FLOOR_SECONDS * 2 ** ((k - 2) / PER_OCTAVE)
    high = math.inf if k >= BUCKETS else FLOOR_SECONDS * 2 ** ((k - 1) / PER_OCTAVE)
    return low, high


def bucket_seconds(k: int) -> float:
    """The duration a percentile in bucket ``k`` is shown as: the bucket's geometric middle
    (half the floor for the first bucket, the lower edge for the open last one)."""
    low, high = bucket_bounds(k)
    if k <= 1:
        return FLOOR_SECONDS / 2
    if math.isinf(high):
        return low
    return math.sqrt(low * high)


# --- the sweeper's step ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RollupResult:
    sampled: int
    minutes: int
    cleared: int
    hours: int
    pruned: int
    start: dt.datetime
    end: dt.datetime


def roll_up() -> RollupResult:
    """Sample, recompute the minutes since the mark and their hours, move the mark, prune.

    Run outside ``transaction.atomic`` (the sweeper's autocommit), each statement commits on
    its own; inside one (a test), it all joins the caller's transaction. Safe to run at any
    time and any number of times: see the module's docstring.
    """
    sampled = len(fetch_all(SAMPLE, {}))
    mark = fetch_one(MARK, {})
    assert mark is not None  # a SELECT without FROM returns its row
    this_minute: dt.datetime = mark["this_minute"]
    through: dt.datetime | None = mark["through"]
    settled = this_minute - dt.timedelta(minutes=SETTLE_MINUTES)
    start = this_minute - dt.timedelta(minutes=BACKFILL_MINUTES)
    if through is not None:
        start = max(min(through, settled), this_minute - dt.timedelta(hours=KEEP_HOURS))
    end = this_minute + dt.timedelta(minutes=1)
    written = cleared = 0
    lo = start
    while lo < end:
        hi = min(lo + dt.timedelta(minutes=CHUNK_MINUTES), end)
        row = fetch_one(MINUTES, {"from": lo, "to": hi})
        written += int(row["written"]) if row else 0
        cleared += int(row["cleared"]) if row else 0
        lo = hi
    hour_start = start.replace(minute=0, second=0, microsecond=0)
    hours = len(fetch_all(HOURS, {"from": hour_start, "to": end}))
    fetch_all(MARK_SET, {"through": end})
    pruned = fetch_one(PRUNE, {"keep_hours": KEEP_HOURS}) or {}
    return RollupResult(
        sampled=sampled,
        minutes=written,
        cleared=cleared,
        hours=hours,
        pruned=int(pruned.get("minutes", 0)) + int(pruned.get("hours", 0)),
        start=start,
        end=end,
    )


def window_minutes(now: dt.datetime) -> tuple[int, int]:
    """The minutes the last hour and the last day span at ``now``: 60, and 23 hours plus this
    hour's minutes so far (this one counted whole, as the rows do)."""
    return 60, 23 * 60 + now.minute + 1


# --- the page's reads --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Percentiles:
    """A window's median and 95th percentile in seconds, from ``n`` measured attempts."""

    n: int
    p50: float
    p95: float


@dataclass(frozen=True, slots=True)
class QueueRow:
    endpoint_id: UUID
    endpoint: str
    revoked: bool
    queue: str
    sampled_at: dt.datetime | None
    pending: int
    in_flight: int
    retry_due: int
    dead: int
    oldest_pending_at: dt.datetime | None
    completed_hour: int
    failed_hour: int
    completed_day: int
    failed_day: int
    # (window, kind) → percentiles; window "hour" | "day", kind "wait" | "run".
    latency: dict[tuple[str, str], Percentiles] = field(default_factory=dict)
    # What its model calls cost this UTC day and the last 24 hours, and the tokens of the
    # last day's calls no price covered (usage_hours).
    cost_today: Decimal = Decimal(0)
    cost_day: Decimal = Decimal(0)
    unpriced_day: int = 0
    # Pending and in flight are the live read's (overview_live.sql), not the last sample's;
    # ``capped``: its endpoint held more unfinished todos than the read counts.
    capped: bool = False
    # Its open pause (the live read's too): why no agent claims from it. None: not paused.
    pause: PauseWhy | None = None


@dataclass(frozen=True, slots=True)
class Point:
    """One bar of a plot: from ``at`` for ``minutes`` (a minute of the last hour, an hour of the
    last day); depth (an hour's: its highest sample per queue, summed) None when no sample saw
    it."""

    at: dt.datetime
    minutes: int
    completed: int
    failed: int
    pending: int | None
    in_flight: int | None


@dataclass(frozen=True, slots=True)
class CostPoint:
    """One hour of the last day: what the model calls that started in it cost, and the tokens
    no price covered."""

    at: dt.datetime
    cost_usd: Decimal
    unpriced_tokens: int


@dataclass(frozen=True, slots=True)
class Overview:
    queues: list[QueueRow]
    hour: list[Point]
    day: list[Point]
    # The newest depth sample among the queues shown (None: none sampled in the last day).
    sampled_at: dt.datetime | None
    cost: list[CostPoint] = field(default_factory=list)


# The page's reads, loaded at import for both sides of the scope (switchboard/scope.py).
_READS = {
    (name, side): load(_SQL, name, scope_endpoints=side)
    for name in (
        "overview_queues",
        "overview_percentiles",
        "overview_series",
        "overview_live",
        "overview_cost",
    )
    for side in (HUMAN_ENDPOINTS_SQL, ENDPOINT_ENDPOINTS_SQL)
}


def _statement(name: str, scope: Scope) -> str:
    return _READS[(name, scope.endpoints_sql)]


def overview(
    scope: Scope,
    endpoint: str = "",
    queue: str = "",
    known: Mapping[Actor, str] | None = None,
) -> Overview:
    """The Overview of the queues in ``scope`` (three reads of the rollups, none of todos); the
    plots for one endpoint's queue when ``endpoint`` and ``queue`` name one, else for all.
    ``known``: names the page holds (the viewer's), so naming who paused a queue costs no read
    when they are among them.

    The last hour is this minute and the 59 before it, from the minute rows; the last day is
    this hour and the 23 before it, from the hour rows (so 23 to 24 hours).

    Preconditions: ``endpoint`` and ``queue`` are text PostgreSQL can hold (the view checks).
    """
    params = scope.params
    rows = fetch_all(_statement("overview_queues", scope), params)
    latency: dict[tuple[str, str], dict[tuple[str, str], Percentiles]] = {}
    if rows:
        for p in fetch_all(_statement("overview_percentiles", scope), params):
            latency.setdefault((str(p["endpoint_id"]), p["queue"]), {})[(p["win"], p["kind"])] = (
                Percentiles(n=p["n"], p50=bucket_seconds(p["p50"]), p95=bucket_seconds(p["p95"]))
            )
    series = fetch_all(
        _statement("overview_series", scope), {**params, "endpoint": endpoint, "queue": queue}
    )
    points: dict[str, list[Point]] = {"minute": [], "hour": []}
    for r in series:
        points[r["grain"]].append(
            Point(
                at=r["at"],
                minutes=1 if r["grain"] == "minute" else 60,
                completed=r["completed"],
                failed=r["failed"],
                pending=r["pending"],
                in_flight=r["in_flight"],
            )
        )
    by_key: dict[tuple[str, str], QueueRow] = {
        (str(row["endpoint_id"]), row["queue"]): QueueRow(
            **row, latency=latency.get((str(row["endpoint_id"]), row["queue"]), {})
        )
        for row in rows
    }
    sampled = [q.sampled_at for q in by_key.values() if q.sampled_at is not None]
    _live(scope, by_key, known)
    cost = _cost(scope, by_key, endpoint, queue)
    return Overview(
        queues=sorted(by_key.values(), key=lambda q: (q.endpoint, q.queue)),
        hour=points["minute"],
        day=points["hour"],
        sampled_at=max(sampled, default=None),
        cost=cost,
    )


def _blank(row: dict[str, Any]) -> QueueRow:
    """A queue the rollups do not hold yet (new, or the sweeper has not sampled it)."""
    return QueueRow(
        endpoint_id=row["endpoint_id"],
        endpoint=row["endpoint"],
        revoked=row["revoked"],
        queue=row["queue"],
        sampled_at=None,
        pending=0,
        in_flight=0,
        retry_due=0,
        dead=0,
        oldest_pending_at=None,
        completed_hour=0,
        failed_hour=0,
        completed_day=0,
        failed_day=0,
    )


def _live(
    scope: Scope, by_key: dict[tuple[str, str], QueueRow], known: Mapping[Actor, str] | None
) -> None:
    """Pending and in flight from the bounded live read, over the samples, and each queue's
    open pause (who paused it named by ``actors.resolve``, none read when ``known`` holds
    them); a queue the rollups do not hold yet joins the table (its first 30 s: the sweeper
    samples it later), as does a paused one with nothing unfinished."""
    rows = fetch_all(_statement("overview_live", scope), {**scope.params, "cap": LIVE_CAP})
    counted: dict[str, int] = {}
    for r in rows:
        counted[str(r["endpoint_id"])] = counted.get(str(r["endpoint_id"]), 0) + (
            r["pending"] + r["in_flight"]
        )
    live = {(str(r["endpoint_id"]), r["queue"]): r for r in rows}
    names = actors.resolve([r["paused_by"] for r in rows if r["paused_by"]], known)
    for key, r in live.items():
        row = by_key.get(key) or _blank(r)
        pause = None
        if r["paused_by"] is not None:
            pause = PauseWhy(
                paused_by=r["paused_by"],
                paused_by_name=names.name(r["paused_by"]),
                reason=r["pause_reason"],
                until=r["paused_until"],
            )
        by_key[key] = replace(
            row,
            pending=r["pending"],
            in_flight=r["in_flight"],
            oldest_pending_at=r["oldest_pending_at"],
            capped=counted[key[0]] >= LIVE_CAP,
            pause=pause,
        )
    for key, row in by_key.items():
        if key not in live and (row.pending or row.in_flight):
            # The read found none unfinished: the sample is stale.
            by_key[key] = replace(row, pending=0, in_flight=0, oldest_pending_at=None)


def _cost(
    scope: Scope, by_key: dict[tuple[str, str], QueueRow], endpoint: str, queue: str
) -> list[CostPoint]:
    """Each queue's cost today and over the last day (a queue with cost and no rollup row
    joins the table), and the last day's cost per hour for the plot."""
    rows = fetch_all(
        _statement("overview_cost", scope), {**scope.params, "endpoint": endpoint, "queue": queue}
    )
    points = []
    for r in rows:
        if r["grain"] == "hour":
            points.append(CostPoint(r["at"], Decimal(r["cost_day"]), int(r["unpriced_day"])))
            continue
        key = (str(r["endpoint_id"]), r["queue"])
        row = by_key.get(key) or _blank(r)
        by_key[key] = replace(
            row,
            cost_today=Decimal(r["cost_today"]),
            cost_day=Decimal(r["cost_day"]),
            unpriced_day=int(r["unpriced_day"]),
        )
    return points
