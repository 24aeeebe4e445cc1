"""todo_spans partitioned by day (otlp/migrations/0006_partitioned_spans.py, otlp/partitions.py):
the coming days' partitions made ahead, once, by any number of sweepers; a span whose day has no
partition still stored; retention by dropping whole days; a span two batches carry stored once;
the migration there and back."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.db.migrations.executor import MigrationExecutor

from activity.trail import _PROGRESS
from attempts.models import TodoAttempt
from otlp import partitions
from otlp.models import TodoSpan
from otlp.store import store
from otlp.translate import Row, collect, translate
from switchboard.lib.sql import fetch_all, fetch_one
from tests.base import Personas
from tests.concurrency.harness import raw_connection
from tests.otlp.helpers import SpanSpec, claimed_with_trace, request, trace_id
from tests.plans import custom_plan, plan_nodes
from todos import lifecycle, sweeps
from todos.models import Todo


def today() -> dt.date:
    row = fetch_one("SELECT (now() AT TIME ZONE 'UTC')::date AS d", {})
    assert row is not None
    return row["d"]


def name(day: dt.date) -> str:
    return f"todo_spans_p{day:%Y%m%d}"


def held_days() -> list[dt.date]:
    """The days todo_spans has a partition for, in order."""
    rows = fetch_all(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
        " WHERE i.inhparent = 'todo_spans'::regclass ORDER BY 1",
        {},
    )
    names = [r["relname"] for r in rows]
    assert "todo_spans_default" in names
    return [
        dt.datetime.strptime(n[12:], "%Y%m%d").date() for n in names if n != "todo_spans_default"
    ]


def add(day: dt.date) -> None:
    fetch_all("SELECT sb_span_partition_add(%(d)s::date)", {"d": day})


def drop(day: dt.date) -> None:
    fetch_all("SELECT sb_span_partition_drop(%(d)s::date)", {"d": day})


def rows(todo_id: str, n: int, seq: int | None = 1, trace: bytes | None = None) -> list[Row]:
    trace = trace or trace_id()
    specs = [SpanSpec(trace, name=f"s{i}") for i in range(n)]
    return [translate(c, todo_id, seq, False) for c in collect(request(specs)).candidates]


def put(batch: list[Row]) -> None:
    store(batch, set(), attempt_cap=1000, todo_cap=1000)


def age(todo_id: str, names: list[str], day: dt.date) -> None:
    """Move the todo's spans ``names`` to noon of ``day``, as if received then (the UPDATE moves
    each row into that day's partition, or the default one)."""
    fetch_all(
        "UPDATE todo_spans SET received_at = %(at)s WHERE todo_id = %(id)s AND name = ANY(%(n)s)",
        {"at": dt.datetime.combine(day, dt.time(12), dt.UTC), "id": todo_id, "n": names},
    )


def where(todo_id: str) -> dict[str, str]:
    """Each of the todo's spans by name: the partition holding it."""
    found = fetch_all(
        "SELECT name, tableoid::regclass::text AS part FROM todo_spans WHERE todo_id = %(id)s",
        {"id": todo_id},
    )
    return {r["name"]: r["part"] for r in found}


@pytest.fixture
def restore_partitions() -> Iterator[None]:
    """For tests that commit: leave today's and the next two days' partitions in place."""
    yield
    partitions.maintain(days=3650)


# --- made ahead ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_migration_made_today_and_the_next_two_days_and_a_default() -> None:
    start = today()

    assert held_days()[-3:] == [start + dt.timedelta(days=i) for i in range(3)]


@pytest.mark.django_db
def test_maintain_makes_the_missing_coming_days_and_run_again_makes_nothing() -> None:
    start = today()
    later = [start + dt.timedelta(days=i) for i in (1, 2)]
    for day in later:
        drop(day)

    first = partitions.maintain()
    again = partitions.maintain()

    assert first.added == later and first.dropped == [] and first.busy == []
    assert first.lines() == [f"spans: made partitions for {later[0]}, {later[1]}"]
    assert again.added == [] and again.lines() == []
    assert held_days()[-3:] == [start, *later]


@pytest.mark.django_db(transaction=True)
def test_two_sweepers_at_once_make_each_partition_exactly_once(
    personas: Personas, restore_partitions: None
) -> None:
    start = today()
    days = [start + dt.timedelta(days=i) for i in range(3)]
    for day in days:
        drop(day)
    barrier = threading.Barrier(2)
    reports: list[Any] = [None, None]

    def sweeper(i: int) -> None:
        try:
            barrier.wait()
            reports[i] = partitions.maintain()
        except BaseException as exc:  # surfaced below
            reports[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=sweeper, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    for report in reports:
        assert isinstance(report, partitions.PartitionReport), report
    made = [day for report in reports for day in report.added]
    assert sorted(made) == days  # each made by one of them, none twice, none failed
    waited = [day for report in reports for day in report.busy]
    assert set(waited) <= set(days)
    assert held_days()[-3:] == days


@pytest.mark.django_db(transaction=True)
def test_a_partition_waiting_on_a_lock_is_given_up_and_made_at_the_next_run(
    personas: Personas, restore_partitions: None
) -> None:
    tomorrow = today() + dt.timedelta(days=1)
    drop(tomorrow)
    pending = lifecycle.create(personas.endpoint_a.id, queue="q")
    # A transition's write to todos, still open: attaching a partition of todo_spans (whose
    # foreign key points at todos) must wait for it; the sweep gives up instead of queueing
    # every later write to todos behind it.
    with raw_connection() as other:
        other.execute("UPDATE todos SET priority = 1 WHERE id = %s", [pending.id])
        started = time.monotonic()
        report = partitions.maintain()
        waited = time.monotonic() - started
        assert tomorrow not in held_days()
        other.rollback()

    assert report.busy == [tomorrow] and report.added == []
    assert waited < 5
    assert report.lines() == [f"spans: {tomorrow} waited on a lock; trying again next run"]
    assert partitions.maintain().added == [tomorrow]


# --- no partition, no failure -------------------------------------------------------------


@pytest.mark.django_db
def test_a_span_whose_day_has_no_partition_is_stored_and_moves_in_when_its_day_is_made(
    personas: Personas,
) -> None:
    start = today()
    drop(start)
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())

    put(rows(claim.todo.id, 2))

    assert set(where(claim.todo.id).values()) == {"todo_spans_default"}
    report = partitions.maintain()
    assert report.added == [start]
    assert set(where(claim.todo.id).values()) == {name(start)}
    assert fetch_all("SELECT 1 FROM todo_spans_default", {}) == []


@pytest.mark.django_db
def test_a_span_received_on_a_day_far_from_any_partition_is_stored(personas: Personas) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    with connection.cursor() as cur:  # any instant: a clock far off, a partition not made
        cur.execute(
            "INSERT INTO todo_spans (todo_id, trace_id, span_id, name, kind, category, start_at,"
            " end_at, received_at) VALUES (%s, %s, %s, 'n', 'internal', 'other', now(), now(),"
            " timestamptz '2199-01-01 00:00+00')",
            [claim.todo.id, trace_id(), b"\x01" * 8],
        )

    assert where(claim.todo.id) == {"n": "todo_spans_default"}


# --- retention ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_retention_drops_the_days_past_it_and_keeps_the_rest_and_every_todo(
    personas: Personas,
) -> None:
    start = today()
    old, edge, recent = (start - dt.timedelta(days=n) for n in (31, 30, 29))
    for day in (old, edge, recent):
        add(day)
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    put(rows(claim.todo.id, 6))
    age(claim.todo.id, ["s0"], old)  # every row of its day older than 30 days
    age(claim.todo.id, ["s1"], edge)  # its day ends 29 days ago: some rows younger than 30
    age(claim.todo.id, ["s2"], recent)
    age(claim.todo.id, ["s3"], start - dt.timedelta(days=40))  # no partition: the default
    age(claim.todo.id, ["s4"], start - dt.timedelta(days=10))  # no partition: the default
    assert where(claim.todo.id)["s3"] == where(claim.todo.id)["s4"] == "todo_spans_default"

    report = partitions.maintain(days=30)

    assert report.dropped == [old] and report.pruned == 1 and report.added == []
    assert report.lines() == [
        f"spans: dropped the partitions of {old} (older than 30 days)",
        "spans: deleted 1 spans older than 30 days from the default partition",
    ]
    assert old not in held_days() and {edge, recent, start} <= set(held_days())
    assert where(claim.todo.id) == {
        "s1": name(edge),
        "s2": name(recent),
        "s4": "todo_spans_default",
        "s5": name(start),
    }
    assert Todo.objects.filter(id=claim.todo.id).exists()  # spans go; todos are todo retention's
    assert TodoAttempt.objects.get(todo_id=claim.todo.id, seq=1).spans_stored == 6


@pytest.mark.django_db
def test_span_retention_days_is_the_runtime_setting(personas: Personas) -> None:
    from switchboard import runtime_settings

    old = today() - dt.timedelta(days=8)
    add(old)
    runtime_settings.put("span_retention_days", 10)
    assert partitions.maintain().dropped == []

    runtime_settings.put("span_retention_days", 7)
    assert partitions.maintain().dropped == [old]


@pytest.mark.django_db(transaction=True)
def test_a_drop_waiting_on_a_reader_is_given_up_and_done_at_the_next_run(
    personas: Personas, restore_partitions: None
) -> None:
    old = today() - dt.timedelta(days=40)
    add(old)
    with raw_connection() as other:
        other.execute("SELECT count(*) FROM todo_spans")  # a read still open on the spans
        report = partitions.maintain(days=30)
        assert old in held_days()
        other.rollback()

    assert report.busy == [old] and report.dropped == []
    assert partitions.maintain(days=30).dropped == [old]


def test_the_spans_step_is_registered_with_the_sweeper_and_reports_in_its_pass() -> None:
    assert sweeps._STEPS["spans"] is partitions.step


@pytest.mark.django_db
def test_the_spans_step_adds_its_lines_to_the_pass(personas: Personas) -> None:
    tomorrow = today() + dt.timedelta(days=1)
    drop(tomorrow)
    report = sweeps.PassReport()

    partitions.step(report, force=True)

    assert report.steps["spans"].added == [tomorrow]
    assert f"spans: made partitions for {tomorrow}" in report.lines()


# --- a span two batches carry ---------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_span_two_batches_carry_at_once_is_stored_once(personas: Personas) -> None:
    # A pending todo: no attempt row for lock.sql to lock, so only the todo's advisory lock
    # keeps the second batch from inserting its own copy (no unique index on the span's key
    # alone: the table is partitioned by received_at).
    todo = lifecycle.create(personas.endpoint_a.id, queue="q")
    batch = rows(todo.id, 1, seq=None)
    first_written, let_go = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with transaction.atomic():
                put(batch)
                first_written.set()
                let_go.wait(30)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    def second() -> None:
        try:
            first_written.wait(30)
            put(batch)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    first_written.wait(30)
    time.sleep(0.5)
    blocked = threads[1].is_alive()  # waiting for the first batch's todo lock
    let_go.set()
    for thread in threads:
        thread.join(30)

    assert errors == []
    assert blocked
    assert TodoSpan.objects.filter(todo_id=todo.id).count() == 1


# --- the migration ------------------------------------------------------------------------


def _migrate(target: list[tuple[str, str]]) -> None:
    MigrationExecutor(connection).migrate(target)


@pytest.fixture
def restore_migrations() -> Iterator[None]:
    """Leave every app migrated and no partition of a day before today."""
    yield
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    partitions.maintain(days=0)


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_stored_spans_into_their_days_and_back(
    personas: Personas, restore_migrations: None
) -> None:
    start = today()
    earlier = start - dt.timedelta(days=3)
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    _migrate([("otlp", "0005_default_prices")])
    assert fetch_one("SELECT relkind FROM pg_class WHERE relname = 'todo_spans'", {}) == {
        "relkind": "r"
    }
    with connection.cursor() as cur:
        for n, at in enumerate((earlier, start)):
            cur.execute(
                "INSERT INTO todo_spans (todo_id, trace_id, span_id, name, kind, category,"
                " start_at, end_at, received_at, attempt_seq) VALUES (%s, %s, %s, %s, 'internal',"
                " 'other', now(), now(), %s, 1)",
                [
                    claim.todo.id,
                    trace_id(),
                    bytes([n + 1]) * 8,
                    f"s{n}",
                    dt.datetime.combine(at, dt.time(6), dt.UTC),
                ],
            )

    _migrate([("otlp", "0006_partitioned_spans")])

    assert where(claim.todo.id) == {"s0": name(earlier), "s1": name(start)}
    assert held_days() == [earlier, *(start + dt.timedelta(days=i) for i in range(3))]

    _migrate([("otlp", "0005_default_prices")])

    assert fetch_one("SELECT relkind FROM pg_class WHERE relname = 'todo_spans'", {}) == {
        "relkind": "r"
    }
    assert where(claim.todo.id) == {"s0": "todo_spans", "s1": "todo_spans"}


@pytest.mark.django_db(transaction=True)
def test_the_span_counts_migration_counts_the_stored_spans_and_goes_back(
    personas: Personas, restore_migrations: None
) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    put(rows(claim.todo.id, 3))
    put(rows(claim.todo.id, 2, seq=None))
    _migrate([("otlp", "0006_partitioned_spans")])
    assert fetch_one("SELECT to_regclass('todo_span_counts') AS t", {}) == {"t": None}

    _migrate([("otlp", "0007_span_counts")])

    counts = fetch_all(
        "SELECT attempt_seq, spans FROM todo_span_counts WHERE todo_id = %(id)s ORDER BY 1",
        {"id": claim.todo.id},
    )
    assert counts == [{"attempt_seq": 0, "spans": 2}, {"attempt_seq": 1, "spans": 3}]


@pytest.mark.django_db
def test_a_todos_span_counts_read_only_the_days_since_it_was_created(
    personas: Personas,
) -> None:
    # activity/sql/todo_progress.sql (the MCP App's counts): its spans were all received after
    # the todo was created, so a day before that is never probed.
    earlier = today() - dt.timedelta(days=5)
    add(earlier)
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    put(rows(claim.todo.id, 3))
    params = {"todo_id": claim.todo.id, "notes": 5, "since": claim.todo.created_at}
    assert fetch_all(_PROGRESS, params)[0]["spans"] == 3

    plan = custom_plan(_PROGRESS, params)
    scanned = {node.get("Relation Name") for node in plan_nodes(plan)}
    assert name(today()) in scanned
    assert name(earlier) not in scanned
