"""The sweeps as ops run them: the commands, the loop, two sweepers at once, SIGTERM."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from switchboard import runtime_settings
from switchboard.lib.sql import fetch_all, fetch_one
from tests.base import Personas
from tests.factories import SourceFactory
from tests.reach import DAY, claimed, expire_lease, make_retry_due, new_todo, set_finished_at
from tests.rows import attempt_rows, todo_row
from todos import lifecycle, limits, retention, sweeps
from todos.models import Event

ROOT = Path(__file__).resolve().parents[2]


def run(command: str, *args: str) -> str:
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def finish(endpoint_id: object, n: int, *, finished_days_ago: int = 0) -> list[str]:
    """``n`` completed todos, finished ``finished_days_ago`` days ago, oldest first."""
    ids = []
    for i in range(n):
        c = claimed(endpoint_id)  # type: ignore[arg-type]
        lifecycle.complete(c.todo.endpoint_id, c.todo.id, owner="worker-1", summary="done")
        set_finished_at(c.todo.id, finished_days_ago * DAY - i)
        ids.append(c.todo.id)
    return ids


def exists(todo_id: str) -> bool:
    return fetch_one("SELECT 1 AS x FROM todos WHERE id = %(id)s", {"id": todo_id}) is not None


@pytest.mark.django_db
def test_reap_command_prints_what_it_requeued_and_dead_lettered(personas: Personas) -> None:
    alive = claimed(personas.endpoint_a.id)
    spent = claimed(personas.endpoint_a.id, max_attempts=1)
    expire_lease(alive.todo.id)
    expire_lease(spent.todo.id)

    out = run("reap")

    assert f"reap: requeued 1: {alive.todo.id}" in out
    assert f"reap: dead-lettered 1: {spent.todo.id}" in out
    assert todo_row(alive.todo.id)["state"] == "pending"
    assert todo_row(spent.todo.id)["state"] == "failed"
    assert run("reap").strip() == "reap: nothing to reap"


@pytest.mark.django_db
def test_requeue_retries_command_prints_the_ids_it_requeued(personas: Personas) -> None:
    c = claimed(personas.endpoint_a.id)
    lifecycle.fail(c.todo.endpoint_id, c.todo.id, owner="worker-1", summary="flaky")
    make_retry_due(c.todo.id)

    out = run("requeue_retries")

    assert f"requeue_retries: requeued 1: {c.todo.id}" in out
    assert todo_row(c.todo.id)["state"] == "pending"
    assert run("requeue_retries").strip() == "requeue_retries: no retry is due"


@pytest.mark.django_db
def test_retention_dry_run_counts_and_deletes_nothing(personas: Personas) -> None:
    old = finish(personas.endpoint_a.id, 2, finished_days_ago=40)

    out = run("retention", "--dry-run")

    assert "would delete 2 todos" in out
    assert all(exists(i) for i in old)


@pytest.mark.django_db
def test_retention_deletes_old_finished_todos_with_their_attempts(personas: Personas) -> None:
    old = finish(personas.endpoint_a.id, 2, finished_days_ago=40)
    recent = finish(personas.endpoint_a.id, 1, finished_days_ago=1)
    live = claimed(personas.endpoint_a.id)
    expire_lease(live.todo.id)  # in flight, lapsed: retention is not the reaper's business

    out = run("retention")

    assert "deleted 2 todos" in out
    assert not any(exists(i) for i in old)
    assert all(attempt_rows(i) == [] for i in old)
    assert exists(recent[0])
    assert exists(live.todo.id)
    assert len(attempt_rows(live.todo.id)) == 1


@pytest.mark.django_db
def test_retention_keeps_only_the_newest_finished_todos_per_endpoint(
    personas: Personas,
) -> None:
    runtime_settings.put("retention_max_terminal", 2)
    a = finish(personas.endpoint_a.id, 4)
    b = finish(personas.endpoint_b.id, 2)
    pending = new_todo(personas.endpoint_a.id)

    run("retention")

    assert [exists(i) for i in a] == [False, False, True, True]
    assert all(exists(i) for i in b)
    assert exists(pending.id)


@pytest.mark.django_db
def test_retention_deletes_old_events_no_todo_references(personas: Personas) -> None:
    source = SourceFactory(owner=personas.alice)
    orphan = Event.objects.create(source=source, disposition="dropped")
    referenced = Event.objects.create(source=source, disposition="routed")
    todo = lifecycle.create(personas.endpoint_a.id, queue="q", event_id=referenced.id)
    Event.objects.update(received_at=orphan.received_at.replace(year=2000))

    out = run("retention")

    assert "1 events" in out
    assert not Event.objects.filter(id=orphan.id).exists()
    assert Event.objects.filter(id=referenced.id).exists()
    assert exists(todo.id)


@pytest.mark.django_db
def test_a_pass_skips_a_sweep_another_sweeper_is_running(personas: Personas) -> None:
    c = claimed(personas.endpoint_a.id)
    expire_lease(c.todo.id)
    # Another sweeper, in its own session, holds the reap lock for its pass.
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [sweeps.LOCK_REAP])
        report = sweeps.run_pass()
        other.execute("SELECT pg_advisory_unlock(%s)", [sweeps.LOCK_REAP])

    assert report.skipped == ["reap"]
    assert report.reaped_requeued == []
    assert todo_row(c.todo.id)["state"] == "claimed"
    assert sweeps.run_pass().reaped_requeued == [c.todo.id]


def _subprocess_env() -> dict[str, str]:
    """Point a child process at the test database this test runs on."""
    s = connection.settings_dict
    host = s["HOST"] or ""
    url = f"postgresql://{s['USER'] or 'postgres'}@/{s['NAME']}?host={host}"
    if host and not host.startswith("/"):
        url = f"postgresql://{s['USER'] or 'postgres'}@{host}:{s['PORT'] or 5432}/{s['NAME']}"
    return {**os.environ, "DATABASE_URL": url, "PYTHONUNBUFFERED": "1"}


@pytest.mark.django_db(transaction=True)
def test_two_sweepers_at_once_reap_each_lease_exactly_once(personas: Personas) -> None:
    ids = []
    for _ in range(30):
        c = claimed(personas.endpoint_a.id)
        expire_lease(c.todo.id)
        ids.append(c.todo.id)
    cmd = [sys.executable, "manage.py", "sweeper", "--once"]
    procs = [
        subprocess.Popen(cmd, cwd=ROOT, env=_subprocess_env(), stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=60)[0] for p in procs]

    assert [p.returncode for p in procs] == [0, 0]
    counts = [int(m) for out in outputs for m in re.findall(r"reap: requeued (\d+)", out)]
    assert sum(counts) == len(ids), outputs  # between them, each lease reaped once
    closes = fetch_all(
        "SELECT todo_id, count(*) AS n FROM todo_attempts WHERE outcome = 'reaped'"
        " GROUP BY todo_id",
        {},
    )
    assert {r["todo_id"]: r["n"] for r in closes} == dict.fromkeys(ids, 1)


@pytest.mark.django_db(transaction=True)
def test_sweeper_stops_cleanly_on_sigterm(personas: Personas) -> None:
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "sweeper", "--interval", "0.2"],
        cwd=ROOT,
        env=_subprocess_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    first = proc.stdout.readline()
    assert "sweeper: running every 0.2s" in first, first
    assert time.monotonic() < deadline

    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=15)

    assert proc.returncode == 0
    assert "SIGTERM, finishing the pass and stopping" in out
    assert out.rstrip().endswith("sweeper: stopped")


@pytest.mark.django_db
def test_the_sweeps_run_against_the_demo_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """What an operator trying the product sees: `make run`'s demo data, its open lease lapsed,
    its scheduled retry due and its finished todos aged past retention, swept by each command."""
    monkeypatch.delenv("SWITCHBOARD_DEMO_PASSWORD", raising=False)
    run("seed_demo", "--if-empty")
    (held,) = fetch_all("SELECT id FROM todos WHERE state = 'claimed'", {})
    (retrying,) = fetch_all(
        "SELECT id FROM todos WHERE state = 'failed' AND next_retry_at IS NOT NULL", {}
    )
    expire_lease(held["id"])
    make_retry_due(retrying["id"])
    fetch_all(
        "UPDATE todos SET finished_at = finished_at - interval '400 days'"
        " WHERE finished_at IS NOT NULL",
        {},
    )
    finished = fetch_all("SELECT id FROM todos WHERE finished_at IS NOT NULL", {})
    total = fetch_one("SELECT count(*) AS n FROM todos", {})

    assert f"reap: requeued 1: {held['id']}" in run("reap")
    assert todo_row(held["id"])["state"] == "pending"
    assert [(a["outcome"], a["disposition"]) for a in attempt_rows(held["id"])][-1] == (
        "reaped",
        "requeued",
    )
    assert f"requeue_retries: requeued 1: {retrying['id']}" in run("requeue_retries")
    assert todo_row(retrying["id"])["state"] == "pending"
    assert f"would delete {len(finished)} todos" in run("retention", "--dry-run")
    assert fetch_one("SELECT count(*) AS n FROM todos", {}) == total
    # One pass of the loop: nothing left to reap or requeue, so it reports only what retention
    # deleted, attempts with their todos.
    sweep = run("sweeper", "--once")
    assert re.search(
        rf"retention: deleted {len(finished)} todos \((\d+) activity rows\), 0 events$",
        sweep.strip(),
    ), sweep
    assert not any(exists(t["id"]) or attempt_rows(t["id"]) for t in finished)


def _other_session() -> psycopg.Connection[Any]:
    """A second session on the test database: it sees only what has committed."""
    return psycopg.connect(**connection.get_connection_params(), autocommit=True)


def _committed_states(other: psycopg.Connection[Any], ids: list[str]) -> list[str]:
    rows = other.execute("SELECT state FROM todos WHERE id = ANY(%s) ORDER BY id", [ids])
    return [r[0] for r in rows.fetchall()]


def _lock_free(other: psycopg.Connection[Any], key: int) -> bool:
    row = other.execute("SELECT pg_try_advisory_lock(%s)", [key]).fetchone()
    assert row is not None
    if row[0]:
        other.execute("SELECT pg_advisory_unlock(%s)", [key])
    return bool(row[0])


@pytest.mark.django_db(transaction=True)
def test_each_reap_batch_commits_before_the_pass_ends(
    personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = []
    for _ in range(3):
        c = claimed(personas.endpoint_a.id)
        expire_lease(c.todo.id)
        ids.append(c.todo.id)
    monkeypatch.setattr(limits, "SWEEP_BATCH", 1)
    reap = lifecycle.reap
    seen: list[tuple[int, bool]] = []

    with _other_session() as other:

        def one_batch(limit: int = 1) -> Any:
            result = reap(limit)
            # Seen from another session while the pass is still running: this batch committed,
            # and the pass still holds its lock.
            states = _committed_states(other, ids)
            seen.append((states.count("pending"), _lock_free(other, sweeps.LOCK_REAP)))
            return result

        monkeypatch.setattr(lifecycle, "reap", one_batch)
        report = sweeps.run_pass()

        assert seen == [(1, False), (2, False), (3, False), (3, False)]
        assert sorted(report.reaped_requeued) == sorted(ids)
        assert _lock_free(other, sweeps.LOCK_REAP)  # released when the sweep ended


@pytest.mark.django_db(transaction=True)
def test_each_retention_batch_commits_before_the_pass_ends(
    personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = finish(personas.endpoint_a.id, 3, finished_days_ago=400)
    monkeypatch.setattr(retention, "BATCH", 1)
    fetch = retention.fetch_all
    left: list[int] = []

    with _other_session() as other:

        def one_batch(sql: str, params: Any) -> Any:
            # Before each batch: what the batches before it deleted is visible to others.
            if sql == retention.RETENTION_TODOS:
                left.append(len(_committed_states(other, ids)))
                assert not _lock_free(other, sweeps.LOCK_RETENTION)
            return fetch(sql, params)

        monkeypatch.setattr(retention, "fetch_all", one_batch)
        report = sweeps.run_pass(with_retention=True)

        assert report.retention is not None and report.retention.todos == 3
        assert left == [3, 2, 1, 0]  # each batch committed before the next began
        assert _lock_free(other, sweeps.LOCK_RETENTION)


@pytest.mark.django_db(transaction=True)
def test_a_sweep_that_fails_releases_its_lock(personas: Personas) -> None:
    def boom() -> None:
        raise RuntimeError("the sweep broke")

    with pytest.raises(RuntimeError):
        sweeps._locked(sweeps.LOCK_REAP, boom)

    with _other_session() as other:
        assert _lock_free(other, sweeps.LOCK_REAP)


@pytest.mark.parametrize("interval", ["0", "-1", "nan", "inf", "0.05", "3601", "soon"])
def test_the_sweeper_refuses_an_interval_out_of_bounds_in_one_line(interval: str) -> None:
    """A zero, negative or NaN interval ran the passes back to back."""
    with pytest.raises(CommandError, match="--interval"):
        call_command("sweeper", "--interval", interval, "--once")
