"""todos/migrations/0027_schedules_five_fields.py: schedules kept with a six-field (per-second)
cron from before ``check_cron`` refused one are paused with a run saying why, and the database
keeps every enabled schedule's cron at five fields; resume refuses one until it is edited."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from switchboard.lib.errors import InvalidInput
from tests.base import Personas
from todos import schedules
from todos.models import Schedule, ScheduleRun

BEFORE = [("todos", "0026_check_domains")]


def _migrate(targets: list[tuple[str, str]]) -> None:
    MigrationExecutor(connection).migrate(targets)


@pytest.fixture
def before_the_check() -> Iterator[None]:
    _migrate(BEFORE)
    yield
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def _kept(personas: Personas, cron: str) -> Schedule:
    """A schedule as the code before check_cron's five fields stored it."""
    schedule = schedules.add(personas.endpoint_a, queue="q", cron="* * * * *", title="t")
    Schedule.objects.filter(pk=schedule.pk).update(cron=cron)
    return schedule


@pytest.mark.django_db(transaction=True)
def test_six_field_schedules_are_paused_with_a_reason(
    personas: Personas, before_the_check: None
) -> None:
    every_second = _kept(personas, "* * * * * *")
    every_minute = _kept(personas, "*/5 * * * *")

    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    every_second.refresh_from_db()
    every_minute.refresh_from_db()
    assert (every_second.enabled, every_second.next_run_at) == (False, None)
    assert every_minute.enabled and every_minute.next_run_at is not None
    [run] = ScheduleRun.objects.filter(schedule=every_second)
    assert run.todo_id is None and "six fields" in run.error and "five fields" in run.error
    assert not ScheduleRun.objects.filter(schedule=every_minute).exists()

    with pytest.raises(InvalidInput, match="five fields"):
        schedules.resume(every_second)
    assert not Schedule.objects.get(pk=every_second.pk).enabled

    edited = schedules.update(every_second, cron="*/10 * * * *")
    assert schedules.resume(edited)


@pytest.mark.django_db
def test_the_database_refuses_an_enabled_six_field_cron(personas: Personas) -> None:
    schedule = schedules.add(personas.endpoint_a, queue="q", cron="* * * * *", title="t")
    with pytest.raises(IntegrityError), transaction.atomic():
        Schedule.objects.filter(pk=schedule.pk).update(cron="* * * * * *")
    schedules.pause(schedule)
    Schedule.objects.filter(pk=schedule.pk).update(cron="* * * * * *")  # paused: kept as is
