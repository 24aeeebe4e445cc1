"""The Overview's rollups (todos/overview.py): the numbers match the attempts and todos they
come from, percentiles within a histogram bucket, a pass run twice changes nothing, the sweeper
runs the step under its lock, and a human reads only the queues of their own endpoints."""

from __future__ import annotations

import math
import threading
from typing import Any
from uuid import UUID

import psycopg
import pytest
from django.db import connection, connections

from switchboard.lib.sql import fetch_all, fetch_one
from switchboard.scope import Scope
from tests.base import Personas
from tests.reach import claimed, died_then_failed, expire_lease, new_todo
from todos import lifecycle, overview, sweeps

pytestmark = pytest.mark.django_db

TABLES = ("overview_minutes", "overview_hours", "overview_marks")


@pytest.fixture(autouse=True)
def _no_rollups() -> None:
    """The rollup tables have no model, so a transactional test elsewhere may leave rows (a mark
    above all) that Django's flush does not remove: start each test from none."""
    for table in TABLES:
        fetch_all(f"DELETE FROM {table}", {})


def ended(
    endpoint_id: UUID,
    queue: str,
    *,
    ok: bool,
    wait: float,
    run: float,
    ended_ago: float,
) -> str:
    """A todo claimed and completed (``ok``) or failed for good, through the lifecycle; then its
    clock moved: created ``wait`` seconds before its claim, claimed ``run`` seconds before its
    attempt ended ``ended_ago`` seconds ago."""
    c = claimed(endpoint_id, queue)
    if ok:
        lifecycle.complete(endpoint_id, c.todo.id, owner="worker-1", summary="done")
    else:
        lifecycle.fail(endpoint_id, c.todo.id, owner="worker-1", summary="red", retryable=False)
    move(c.todo.id, 1, wait=wait, run=run, ended_ago=ended_ago)
    return c.todo.id


def move(todo_id: str, seq: int, *, wait: float, run: float, ended_ago: float) -> None:
    fetch_all(
        """UPDATE todo_attempts
              SET ended_at = now() - %(e)s * interval '1 second',
                  claimed_at = now() - (%(e)s + %(r)s) * interval '1 second'
            WHERE todo_id = %(id)s AND seq = %(seq)s""",
        {"id": todo_id, "seq": seq, "e": ended_ago, "r": run},
    )
    if seq == 1:
        fetch_all(
            "UPDATE todos SET created_at = now() - (%(e)s + %(r)s + %(w)s) * interval '1 second'"
            " WHERE id = %(id)s",
            {"id": todo_id, "e": ended_ago, "r": run, "w": wait},
        )


def direct(endpoint_id: UUID, queue: str, window: str) -> dict[str, Any]:
    """What the rollup should say, from todo_attempts directly: attempts that ended completed
    and failed (or died) in the window (``hour``: this minute and the 59 before; ``day``: this
    hour and the 23 before), and their durations."""
    rows = fetch_all(
        """SELECT a.outcome, a.seq,
                  EXTRACT(EPOCH FROM a.ended_at - a.claimed_at)::float8 AS run,
                  EXTRACT(EPOCH FROM a.claimed_at - t.created_at)::float8 AS wait
             FROM todo_attempts a JOIN todos t ON t.id = a.todo_id
            WHERE t.endpoint_id = %(ep)s AND t.queue = %(q)s
              AND a.outcome IN ('completed', 'failed', 'lease_expired', 'reaped')
              AND a.ended_at >= CASE WHEN %(hour)s
                                THEN date_trunc('minute', now()) - interval '59 minutes'
                                ELSE date_trunc('hour', now()) - interval '23 hours' END""",
        {"ep": endpoint_id, "q": queue, "hour": window == "hour"},
    )
    return {
        "completed": sum(r["outcome"] == "completed" for r in rows),
        "failed": sum(r["outcome"] != "completed" for r in rows),
        "runs": sorted(r["run"] for r in rows),
        "waits": sorted(r["wait"] for r in rows if r["seq"] == 1),
    }


def nearest_rank(values: list[float], p: float) -> float:
    return values[math.ceil(p * len(values)) - 1]


def row_of(scope: Scope, endpoint: str, queue: str) -> overview.QueueRow:
    rows = [
        q for q in overview.overview(scope).queues if (q.endpoint, q.queue) == (endpoint, queue)
    ]
    assert len(rows) == 1, rows
    return rows[0]


def everything() -> list[tuple[Any, ...]]:
    out = []
    for table, key in (("overview_minutes", "minute"), ("overview_hours", "hour")):
        for row in fetch_all(f"SELECT * FROM {table} ORDER BY endpoint_id, queue, {key}", {}):
            out.append((table, *(v for k, v in sorted(row.items()) if k != "sampled_at")))
    return out


# --- the counts --------------------------------------------------------------------------------


def test_the_rollup_counts_the_attempts_that_ended_per_hour_and_day(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    for i in range(6):
        ended(ep, "build", ok=True, wait=5, run=30 + i, ended_ago=60 * (5 + 12 * i))
    for i in range(3):
        ended(ep, "build", ok=False, wait=2, run=10, ended_ago=3600 * (2 + 5 * i))
    ended(ep, "deploy", ok=True, wait=1, run=1, ended_ago=30)
    # Not counted: an attempt released, and one ended more than a day ago.
    c = claimed(ep, "build")
    lifecycle.release(ep, c.todo.id, owner="worker-1")
    ended(ep, "build", ok=True, wait=1, run=1, ended_ago=86_400 + 120)

    overview.roll_up()

    row = row_of(Scope.of_human(personas.alice.id), "agent-a", "build")
    hour, day = direct(ep, "build", "hour"), direct(ep, "build", "day")
    assert (row.completed_hour, row.failed_hour) == (hour["completed"], hour["failed"]) == (5, 0)
    assert (row.completed_day, row.failed_day) == (day["completed"], day["failed"]) == (6, 3)
    deploy = row_of(Scope.of_human(personas.alice.id), "agent-a", "deploy")
    assert (deploy.completed_hour, deploy.completed_day) == (1, 1)


def test_an_attempt_that_died_counts_as_a_failure(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    c = claimed(ep, "build")
    expire_lease(c.todo.id)
    assert list(lifecycle.reap().requeued) == [c.todo.id]

    overview.roll_up()

    row = row_of(Scope.of_human(personas.alice.id), "agent-a", "build")
    assert (row.completed_hour, row.failed_hour) == (0, 1)


# --- the percentiles ---------------------------------------------------------------------------


def test_percentiles_are_the_exact_ones_within_a_bucket(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    runs = [0.05, 0.4, 3, 7, 12, 20, 45, 61, 90, 150, 300, 600, 1200, 2400, 5000, 9000]
    for i, run in enumerate(runs):
        # The older half ended more than an hour ago: the day's numbers differ from the hour's.
        ago = 60 * (3 + i) if i % 2 else 3600 + 300 * i
        ended(ep, "build", ok=i % 3 != 0, wait=1.5 * (i + 1) ** 2, run=run, ended_ago=ago)

    overview.roll_up()

    row = row_of(Scope.of_human(personas.alice.id), "agent-a", "build")
    precision = 2 ** (1 / (2 * overview.PER_OCTAVE))
    for window in ("hour", "day"):
        exact = direct(ep, "build", window)
        for kind, values in (("run", exact["runs"]), ("wait", exact["waits"])):
            got = row.latency[(window, kind)]
            assert got.n == len(values)
            for p, shown in ((0.5, got.p50), (0.95, got.p95)):
                value = nearest_rank(values, p)
                # The shown value is the middle of the bucket the exact one falls in ...
                assert shown == overview.bucket_seconds(overview.bucket_of(value))
                # ... so within half a bucket of it (below the floor: shown as half the floor).
                if value >= overview.FLOOR_SECONDS:
                    assert value / precision <= shown <= value * precision, (window, kind, p)


def test_claim_wait_counts_first_attempts_only(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = died_then_failed(ep).todo.id
    move(todo_id, 1, wait=4, run=60, ended_ago=600)
    move(todo_id, 2, wait=0, run=30, ended_ago=120)

    overview.roll_up()

    row = row_of(Scope.of_human(personas.alice.id), "agent-a", "default")
    assert row.failed_hour == 2
    assert row.latency[("hour", "run")].n == 2
    assert row.latency[("hour", "wait")].n == 1
    assert row.latency[("hour", "wait")].p50 == overview.bucket_seconds(overview.bucket_of(4))


def test_the_sql_buckets_agree_with_the_python_ones() -> None:
    values = [0, 0.05, 0.1, 0.11, 0.99, 1, 1.2, 59.9, 60, 3600, 86_400, 10**7, 10**9]
    sql = "SELECT " + ", ".join(
        f"{overview.bucket_sql(f'%(v{i})s::float8')} AS b{i}" for i in range(len(values))
    )
    row = fetch_one(sql, {f"v{i}": v for i, v in enumerate(values)})
    assert row is not None
    assert [row[f"b{i}"] for i in range(len(values))] == [overview.bucket_of(v) for v in values]
    for k in range(1, overview.BUCKETS + 1):
        low, high = overview.bucket_bounds(k)
        # (just inside the edge: the edges themselves are computed in floating point)
        assert overview.bucket_of(low * (1 + 1e-9)) == k
        assert low <= overview.bucket_seconds(k) < high


# --- the depth sample ----------------------------------------------------------------------------


def test_the_sample_counts_each_queue_by_state(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    oldest = new_todo(ep, "build")
    fetch_all(
        "UPDATE todos SET created_at = now() - interval '10 minutes' WHERE id = %(id)s",
        {"id": oldest.id},
    )
    new_todo(ep, "build")
    claimed(ep, "build")
    died_then_failed(ep, "build")  # failed, a retry scheduled
    ended(ep, "build", ok=False, wait=1, run=1, ended_ago=5)  # a dead letter
    new_todo(ep, "other")

    overview.roll_up()

    row = row_of(Scope.of_human(personas.alice.id), "agent-a", "build")
    counts = fetch_one(
        """SELECT count(*) FILTER (WHERE state = 'pending') AS pending,
                  count(*) FILTER (WHERE state = 'claimed') AS in_flight,
                  count(*) FILTER (WHERE state = 'failed' AND next_retry_at IS NOT NULL)
                      AS retry_due,
                  count(*) FILTER (WHERE state = 'failed' AND next_retry_at IS NULL) AS dead,
                  min(created_at) FILTER (WHERE state = 'pending') AS oldest
             FROM todos WHERE endpoint_id = %(ep)s AND queue = 'build'""",
        {"ep": ep},
    )
    assert counts is not None
    assert (row.pending, row.in_flight, row.retry_due, row.dead) == (2, 1, 1, 1)
    assert (row.pending, row.in_flight, row.retry_due, row.dead) == (
        counts["pending"],
        counts["in_flight"],
        counts["retry_due"],
        counts["dead"],
    )
    assert row.oldest_pending_at == counts["oldest"]
    assert row.sampled_at is not None


def test_a_busy_queue_that_empties_is_sampled_at_zero(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo = new_todo(ep, "build")
    overview.roll_up()
    assert row_of(Scope.of_human(personas.alice.id), "agent-a", "build").pending == 1
    lifecycle.operator_cancel(personas.alice.id, todo.id, reason="not needed")
    # The next pass, a minute later: move the first sample back a minute.
    fetch_all("UPDATE overview_minutes SET minute = minute - interval '1 minute'", {})

    overview.roll_up()

    row = row_of(Scope.of_human(personas.alice.id), "agent-a", "build")
    assert (row.pending, row.oldest_pending_at) == (0, None)
    series = overview.overview(Scope.of_human(personas.alice.id)).hour
    assert [p.pending for p in series[-2:]] == [1, 0]


# --- idempotent, late commits, pruning ----------------------------------------------------------


def test_a_second_pass_changes_nothing(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    for i in range(5):
        ended(ep, "build", ok=i % 2 == 0, wait=i, run=10 * i, ended_ago=600 * i + 30)
    new_todo(ep, "build")
    overview.roll_up()
    first = everything()

    again = overview.roll_up()

    assert everything() == first
    assert again.start < again.end
    # The second pass recomputed only the settle window, not the day.
    assert (again.end - again.start).total_seconds() <= 60 * (overview.SETTLE_MINUTES + 1)


def test_an_attempt_committed_late_inside_the_settle_window_is_counted(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    ended(ep, "build", ok=True, wait=1, run=1, ended_ago=10)
    overview.roll_up()
    # A transition whose transaction began two minutes ago commits only now.
    ended(ep, "build", ok=True, wait=1, run=1, ended_ago=120)

    overview.roll_up()

    assert row_of(Scope.of_human(personas.alice.id), "agent-a", "build").completed_hour == 2


def test_a_minute_whose_attempts_are_gone_is_cleared(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = ended(ep, "build", ok=True, wait=1, run=1, ended_ago=10)
    overview.roll_up()
    fetch_all("DELETE FROM todos WHERE id = %(id)s", {"id": todo_id})

    result = overview.roll_up()

    assert result.cleared == 1
    row = row_of(Scope.of_human(personas.alice.id), "agent-a", "build")
    assert (row.completed_hour, row.completed_day, row.latency) == (0, 0, {})


def test_rows_past_the_keep_window_are_pruned(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    ended(ep, "build", ok=True, wait=1, run=1, ended_ago=10)
    overview.roll_up()
    fetch_all(
        "UPDATE overview_minutes SET minute = minute - %(h)s * interval '1 hour'",
        {"h": overview.KEEP_HOURS + 1},
    )
    fetch_all(
        "UPDATE overview_hours SET hour = hour - %(h)s * interval '1 hour'",
        {"h": overview.KEEP_HOURS + 1},
    )

    result = overview.roll_up()

    assert result.pruned == 2
    old = fetch_one(
        "SELECT count(*) AS n FROM overview_minutes WHERE minute < now() - interval '1 day'", {}
    )
    assert old == {"n": 0}


# --- scope ---------------------------------------------------------------------------------------


def test_bob_sees_none_of_alices_queues(personas: Personas) -> None:
    ended(personas.endpoint_a.id, "alice-only", ok=True, wait=1, run=5, ended_ago=30)
    new_todo(personas.endpoint_a.id, "alice-only")
    ended(personas.endpoint_b.id, "bob-only", ok=False, wait=1, run=5, ended_ago=30)

    overview.roll_up()

    for scope in (Scope.of_human(personas.bob.id), Scope.of_endpoint(personas.endpoint_b.id)):
        data = overview.overview(scope)
        assert [(q.endpoint, q.queue) for q in data.queues] == [("agent-b", "bob-only")]
        assert sum(p.completed for p in data.day) == 0
        assert sum(p.failed for p in data.day) == 1
        assert all(not p.pending for p in data.hour)
        # Naming alice's queue shows bob nothing of it.
        named = overview.overview(scope, "agent-a", "alice-only")
        assert sum(p.completed for p in named.day) == 0
    alice = overview.overview(Scope.of_human(personas.alice.id))
    assert [(q.endpoint, q.queue) for q in alice.queues] == [("agent-a", "alice-only")]


# --- the sweeper ---------------------------------------------------------------------------------


def test_a_sweeper_pass_rolls_up_at_most_once_per_interval(
    personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweeps, "_overview_at", None)
    ended(personas.endpoint_a.id, "build", ok=True, wait=1, run=1, ended_ago=10)

    first = sweeps.run_pass()
    second = sweeps.run_pass()

    assert first.rollup is not None and first.rollup.minutes >= 1
    assert second.rollup is None
    assert row_of(Scope.of_human(personas.alice.id), "agent-a", "build").completed_hour == 1


def test_a_pass_skips_the_rollup_another_sweeper_is_running(
    personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweeps, "_overview_at", None)
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [sweeps.LOCK_OVERVIEW])
        report = sweeps.run_pass()
        other.execute("SELECT pg_advisory_unlock(%s)", [sweeps.LOCK_OVERVIEW])

    assert report.skipped == ["overview"]
    assert report.rollup is None


@pytest.mark.django_db(transaction=True)
def test_two_sweepers_at_once_leave_the_numbers_one_would(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    for i in range(20):
        ended(ep, f"q{i % 4}", ok=i % 3 != 0, wait=i, run=2 * i + 1, ended_ago=97 * i + 5)
    new_todo(ep, "q0")
    barrier = threading.Barrier(4)
    reports: list[sweeps.PassReport] = []
    errors: list[BaseException] = []

    def sweeper() -> None:
        try:
            barrier.wait()
            report = sweeps.PassReport()
            sweeps.roll_up(report, force=True)
            reports.append(report)
        except BaseException as exc:  # a deadlock or a constraint would land here
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=sweeper) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)

    assert errors == []
    assert sum(r.rollup is not None for r in reports) >= 1
    assert all(r.rollup is not None or r.skipped == ["overview"] for r in reports)
    after_race = everything()
    fetch_all("DELETE FROM overview_marks", {})
    overview.roll_up()
    assert everything() == after_race
    rows = overview.overview(Scope.of_human(personas.alice.id)).queues
    assert sum(q.completed_day + q.failed_day for q in rows) == 20
