"""todos/schedules.py: the writer's checks, the fire step, missed ticks, DST and templates."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim
from django.db import connection
from django.utils import timezone

from switchboard.lib.errors import InvalidInput
from tests.base import Personas
from todos import lifecycle, limits, schedules, sweeps
from todos.models import Schedule, ScheduleRun, Todo

pytestmark = pytest.mark.django_db

UTC = dt.UTC
BERLIN = ZoneInfo("Europe/Berlin")


def add(personas: Personas, **overrides: object) -> Schedule:
    args: dict[str, object] = {"queue": "reports", "cron": "* * * * *", "title": "Report {tick}"}
    args.update(overrides)
    return schedules.add(personas.endpoint_a, **args)  # type: ignore[arg-type]


def due_at(schedule: Schedule, when: dt.datetime) -> None:
    """Move the schedule's next run to ``when`` directly (the clock does not move in a test)."""
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=when)


def minute(t: dt.datetime) -> dt.datetime:
    return t.replace(second=0, microsecond=0)


# --- add and its checks ----------------------------------------------------------------------


def test_add_sets_the_first_tick_after_now(personas: Personas) -> None:
    before = timezone.now()
    schedule = add(personas, cron="*/5 * * * *", timezone="Europe/Berlin", by=personas.alice)

    expected = next(CronSim("*/5 * * * *", before.astimezone(BERLIN)))
    assert schedule.next_run_at == expected
    assert schedule.created_by == personas.alice
    assert schedules.upcoming(schedule)[:2] == [
        expected,
        expected + dt.timedelta(minutes=5),
    ]


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"cron": "61 * * * *"}, "cron", "Bad minute"),
        ({"cron": "* * * *"}, "cron", "must have five fields"),
        # cronsim's six-field form (seconds first): a todo on every sweeper pass.
        ({"cron": "* * * * * *"}, "cron", "must have five fields"),
        ({"cron": "0 0 * * * 5"}, "cron", "must have five fields"),
        ({"cron": "0 0 30 2 *"}, "cron", "Bad day-of-month"),
        ({"cron": ""}, "cron", "must be a cron expression"),
        ({"timezone": "Mars/Olympus"}, "timezone", "unknown time zone 'Mars/Olympus'"),
        ({"timezone": "../etc/passwd"}, "timezone", "unknown time zone"),
        ({"title": "{tick.year}"}, "title", "may use only"),
        ({"title": "{tick!r}"}, "title", "may use only"),
        ({"title": "{tick:>999999999}"}, "title", "may use only"),
        ({"title": "{secret}"}, "title", "may use only"),
        ({"title": "{"}, "title", "is not a valid template"),
        ({"payload": [1]}, "payload", "must be a JSON object"),
        ({"payload": {"a": "{tick.__class__}"}}, "payload", "may use only"),
        ({"work_order": "{0}"}, "work_order", "may use only"),
        ({"missed": "catch_up"}, "missed", "must be one of skip, run_once"),
        ({"queue": ""}, "queue", "non-empty"),
        ({"queue": " q "}, "queue", "spaces"),
        ({"priority": 5000}, "priority", "between -1000 and 1000"),
        ({"run_timeout_seconds": 5}, "run_timeout_seconds", "between 10"),
        ({"run_timeout_seconds": 7 * 86400 + 1}, "run_timeout_seconds", "and 604800"),
        ({"finish_within": 0}, "finish_within", "between 1"),
        # Every tick's todo would be refused (start_by after finish_by).
        ({"start_within": 100, "finish_within": 10}, "start_within", "not be longer than"),
        ({"max_attempts": 0}, "max_attempts", "between 1 and"),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    personas: Personas, overrides: dict[str, object], field: str, message: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        add(personas, **overrides)
    assert caught.value.field == field
    assert message in str(caught.value)
    assert not Schedule.objects.exists()


def test_a_run_timeout_is_bounded_as_a_todos_own(personas: Personas) -> None:
    """One bound (todos/limits.py): a schedule's todos may run as long as any todo, 7 days."""
    schedule = add(personas, run_timeout_seconds=limits.RUN_TIMEOUT_MAX_SECONDS)
    assert schedule.run_timeout_seconds == 7 * 86400


def test_a_foreign_or_revoked_endpoint_is_refused(personas: Personas) -> None:
    with pytest.raises(InvalidInput, match="endpoint: unknown endpoint"):
        add(personas, by=personas.bob)
    lifecycle.revoke_endpoint(personas.alice.id, personas.endpoint_a.id)
    personas.endpoint_a.refresh_from_db()
    with pytest.raises(InvalidInput, match="endpoint: is revoked"):
        add(personas)
    assert not Schedule.objects.exists()


# --- the fire step ---------------------------------------------------------------------------


def test_a_due_tick_creates_one_todo_and_moves_on(personas: Personas) -> None:
    schedule = add(
        personas,
        title="Report {date} {time} #{schedule}",
        payload={"kind": "daily", "at": "{tick}", "n": [1, "{date}"]},
        work_order="Summarise the day before {tick}.",
        timezone="Europe/Berlin",
        max_attempts=2,
    )
    tick = minute(timezone.now()) - dt.timedelta(seconds=60)
    due_at(schedule, tick)

    (fired,) = schedules.fire_due(now=tick + dt.timedelta(seconds=3))

    local = tick.astimezone(BERLIN)
    todo = Todo.objects.get(pk=fired.todo_id)
    assert (todo.endpoint_id, todo.queue, todo.max_attempts) == (
        personas.endpoint_a.id,
        "reports",
        2,
    )
    assert todo.title == f"Report {local:%Y-%m-%d %H:%M} #{schedule.pk}"
    assert todo.payload == {"kind": "daily", "at": local.isoformat(), "n": [1, f"{local:%Y-%m-%d}"]}
    assert todo.work_order == f"Summarise the day before {local.isoformat()}."
    schedule.refresh_from_db()
    assert schedule.last_run_at == tick
    assert schedule.next_run_at == tick + dt.timedelta(minutes=1)
    (run,) = ScheduleRun.objects.all()
    assert (run.tick, run.todo_id, run.ticks, run.error) == (tick, todo.id, 1, "")
    # Fired: nothing is due any more.
    assert schedules.fire_due(now=tick + dt.timedelta(seconds=4)) == []


def test_nothing_fires_before_the_tick(personas: Personas) -> None:
    schedule = add(personas)
    assert schedule.next_run_at is not None
    assert schedules.fire_due(now=schedule.next_run_at - dt.timedelta(seconds=1)) == []
    assert not Todo.objects.exists()


def test_a_paused_schedule_does_not_fire_and_resumes_from_now(personas: Personas) -> None:
    schedule = add(personas)
    assert schedules.pause(schedule) is True
    assert schedules.pause(schedule) is False
    assert schedules.fire_due(now=timezone.now() + dt.timedelta(days=1)) == []

    assert schedules.resume(schedule) is True
    schedule.refresh_from_db()
    assert schedule.enabled
    assert schedule.next_run_at is not None and schedule.next_run_at > timezone.now()


def test_the_time_fields_count_from_the_tick(personas: Personas) -> None:
    schedule = add(
        personas, priority=7, start_within=60, finish_within=3600, run_timeout_seconds=90
    )
    row = {
        "id": schedule.pk,
        "priority": 7,
        "start_within_seconds": 60,
        "finish_within_seconds": 3600,
        "run_timeout_seconds": 90,
    }
    tick = dt.datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    assert schedules._time_fields(row, tick) == {
        "priority": 7,
        "start_by": tick + dt.timedelta(seconds=60),
        "finish_by": tick + dt.timedelta(hours=1),
        "run_timeout_seconds": 90,
        "dedupe_key": f"schedule:{schedule.pk}:2026-03-29T01:00:00+00:00",
    }


def test_a_refused_todo_is_recorded_and_the_schedule_moves_on(personas: Personas) -> None:
    schedule = add(personas)
    tick = minute(timezone.now())
    due_at(schedule, tick)
    lifecycle.revoke_endpoint(personas.alice.id, personas.endpoint_a.id)
    personas.endpoint_a.refresh_from_db()

    (fired,) = schedules.fire_due(now=tick + dt.timedelta(seconds=1))

    assert fired.todo_id is None and "endpoint" in fired.error
    assert not Todo.objects.exists()
    (run,) = ScheduleRun.objects.all()
    assert run.todo_id is None and run.error == fired.error
    schedule.refresh_from_db()
    assert schedule.next_run_at == tick + dt.timedelta(minutes=1)


def test_a_second_run_of_a_tick_is_refused_by_the_database(personas: Personas) -> None:
    schedule = add(personas)
    tick = minute(timezone.now())
    ScheduleRun.objects.create(schedule=schedule, tick=tick)
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        ScheduleRun.objects.create(schedule=schedule, tick=tick)


def test_run_now_creates_a_todo_and_keeps_the_next_run(personas: Personas) -> None:
    schedule = add(personas, cron="0 9 * * 1")
    before = schedule.next_run_at

    run = schedules.run_now(schedule)

    assert Todo.objects.filter(pk=run.todo_id).exists()
    assert run.ticks == 0
    schedule.refresh_from_db()
    assert schedule.next_run_at == before


def test_old_runs_are_pruned(personas: Personas, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schedules, "RUNS_KEPT", 3)
    schedule = add(personas)
    start = minute(timezone.now())
    for i in range(5):
        due_at(schedule, start + dt.timedelta(minutes=i))
        schedules.fire_due(now=start + dt.timedelta(minutes=i, seconds=1))
    ticks = list(ScheduleRun.objects.values_list("tick", flat=True))
    assert ticks == [start + dt.timedelta(minutes=i) for i in (4, 3, 2)]
    assert Todo.objects.count() == 5


def test_update_moves_the_next_run_when_the_cron_changes(personas: Personas) -> None:
    schedule = add(personas)
    updated = schedules.update(schedule, cron="0 0 1 1 *", title="Yearly {date}")
    assert updated.title_template == "Yearly {date}"
    assert updated.next_run_at is not None and updated.next_run_at.month == 1
    with pytest.raises(InvalidInput, match="cron: Bad minute"):
        schedules.update(schedule, cron="99 * * * *")
    with pytest.raises(InvalidInput, match="endpoint: cannot be changed"):
        schedules.update(schedule, endpoint=personas.endpoint_b)
    schedule.refresh_from_db()
    assert schedule.cron == "0 0 1 1 *"


# --- missed ticks ----------------------------------------------------------------------------


def test_skip_records_the_missed_ticks_and_jumps_past_now(personas: Personas) -> None:
    schedule = add(personas, cron="*/10 * * * *", missed="skip")
    now = dt.datetime(2026, 6, 1, 12, 34, 56, tzinfo=UTC)
    due_at(schedule, dt.datetime(2026, 6, 1, 11, 0, tzinfo=UTC))  # down since before 11:00

    (fired,) = schedules.fire_due(now=now)

    assert fired.skipped and fired.todo_id is None and fired.ticks == 10  # 11:00 … 12:30
    assert not Todo.objects.exists()
    schedule.refresh_from_db()
    assert schedule.next_run_at == dt.datetime(2026, 6, 1, 12, 40, tzinfo=UTC)
    assert schedule.last_run_at is None


def test_run_once_fires_one_todo_for_the_missed_ticks_then_jumps(personas: Personas) -> None:
    schedule = add(personas, cron="*/10 * * * *", missed="run_once", title="at {time}")
    now = dt.datetime(2026, 6, 1, 12, 34, 56, tzinfo=UTC)
    due_at(schedule, dt.datetime(2026, 6, 1, 11, 0, tzinfo=UTC))

    (fired,) = schedules.fire_due(now=now)

    assert not fired.skipped and fired.ticks == 10
    assert fired.tick == dt.datetime(2026, 6, 1, 12, 30, tzinfo=UTC)  # the latest passed tick
    assert list(Todo.objects.values_list("title", flat=True)) == ["at 12:30"]
    schedule.refresh_from_db()
    assert schedule.next_run_at == dt.datetime(2026, 6, 1, 12, 40, tzinfo=UTC)
    assert schedule.last_run_at == fired.tick
    assert schedules.fire_due(now=now) == []


def test_a_tick_long_overdue_is_missed_even_if_the_next_is_not_due(personas: Personas) -> None:
    schedule = add(personas, cron="0 6 * * *", missed="skip")
    now = dt.datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
    due_at(schedule, dt.datetime(2026, 6, 1, 6, 0, tzinfo=UTC))

    (fired,) = schedules.fire_due(now=now)

    assert fired.skipped and fired.ticks == 1
    schedule.refresh_from_db()
    assert schedule.next_run_at == dt.datetime(2026, 6, 2, 6, 0, tzinfo=UTC)


def test_a_tick_a_little_late_is_not_missed(personas: Personas) -> None:
    schedule = add(personas, cron="0 6 * * *", missed="skip")
    due_at(schedule, dt.datetime(2026, 6, 1, 6, 0, tzinfo=UTC))
    (fired,) = schedules.fire_due(now=dt.datetime(2026, 6, 1, 6, 0, 30, tzinfo=UTC))
    assert not fired.skipped and fired.todo_id is not None


# --- DST -------------------------------------------------------------------------------------


def test_dst_spring_forward_fires_as_cronsim_says(personas: Personas) -> None:
    """02:30 does not exist in Berlin on 2026-03-29: cronsim fires at 03:00 CEST that day."""
    schedule = add(personas, cron="30 2 * * *", timezone="Europe/Berlin", title="{tick}")
    start = dt.datetime(2026, 3, 27, 12, 0, tzinfo=BERLIN)
    expected = [
        t.astimezone(UTC) for t, _ in zip(CronSim("30 2 * * *", start), range(4), strict=False)
    ]
    assert expected[1] == dt.datetime(2026, 3, 29, 1, 0, tzinfo=UTC)  # 03:00 CEST

    due_at(schedule, expected[0])
    fired_ticks = []
    for tick in expected[:3]:
        (fired,) = schedules.fire_due(now=tick + dt.timedelta(seconds=5))
        fired_ticks.append(fired.tick)
    assert fired_ticks == expected[:3]
    schedule.refresh_from_db()
    assert schedule.next_run_at == expected[3]
    # In tick order: the three todos share one transaction, hence one created_at.
    runs = ScheduleRun.objects.filter(schedule=schedule).order_by("tick")
    titles = list(runs.values_list("todo__title", flat=True))
    assert titles == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]


def test_dst_fall_back_fires_the_repeated_time_once(personas: Personas) -> None:
    """02:30 happens twice in Berlin on 2026-10-25: the schedule fires at the first only."""
    schedule = add(personas, cron="30 2 * * *", timezone="Europe/Berlin", title="{tick}")
    first = dt.datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 02:30 CEST
    due_at(schedule, first)

    (fired,) = schedules.fire_due(now=first + dt.timedelta(seconds=5))
    assert fired.tick == first
    assert schedules.fire_due(now=first + dt.timedelta(hours=1, seconds=5)) == []  # 02:30 CET
    schedule.refresh_from_db()
    assert schedule.next_run_at == dt.datetime(2026, 10, 26, 1, 30, tzinfo=UTC)


def test_the_due_scan_uses_its_index() -> None:
    with connection.cursor() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute(
            "EXPLAIN " + schedules.SCHEDULE_DUE.replace("%(now)s", "NULL"),
        )
        plan = "\n".join(row[0] for row in cur.fetchall())
    assert "schedules_due_idx" in plan


def test_the_sweeper_pass_fires_due_schedules(personas: Personas) -> None:
    schedule = add(personas, cron="0 0 1 1 *")
    due_at(schedule, timezone.now() - dt.timedelta(seconds=2))

    report = sweeps.run_pass()

    (fired,) = report.scheduled
    assert fired.schedule_id == schedule.pk and Todo.objects.filter(pk=fired.todo_id).exists()
    assert f"schedules: created 1: {fired.todo_id}" in report.lines()
    assert sweeps.run_pass().scheduled == []
