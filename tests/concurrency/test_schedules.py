"""Race test of the schedules' fire step (the concurrency argument in ``todos/schedules.py``).

Two sweepers call ``fire_due`` over and over, each on its own connection, while the clock passes
tick after tick of an every-minute schedule. The clock is the ``now`` the fire step is given
(PostgreSQL's ``now()`` does not follow a test's clock, and waiting minutes is no test): the
schedule's due tick is real, only the instant it is compared with moves.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections import Counter

import pytest

from tests.base import Personas
from tests.concurrency.harness import Crew
from todos import schedules
from todos.models import Schedule, ScheduleRun, Todo

TICKS = 20
BASE = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)


@pytest.mark.django_db(transaction=True)
def test_two_sweepers_create_exactly_one_todo_per_tick(personas: Personas) -> None:
    schedule = schedules.add(personas.endpoint_a, queue="q", cron="* * * * *", title="{tick}")
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=BASE)
    clock = [BASE - dt.timedelta(seconds=1)]
    stop = threading.Event()
    fired: list[schedules.Fired] = []
    passes = Counter[str]()
    lock = threading.Lock()
    crew = Crew()

    def sweeper(name: str) -> None:
        while not stop.is_set():
            got = schedules.fire_due(now=clock[0])
            with lock:
                fired.extend(got)
                passes[name] += 1

    for name in ("sweeper 1", "sweeper 2"):
        crew.start(name, lambda name=name: sweeper(name))
    try:
        for k in range(TICKS):
            tick = BASE + dt.timedelta(minutes=k)
            clock[0] = tick + dt.timedelta(seconds=1)  # the tick is due, the next one is not
            deadline = time.monotonic() + 10
            # Advance only once the tick has fired, so every tick meets two live sweepers.
            while Schedule.objects.get(pk=schedule.pk).next_run_at == tick:
                assert time.monotonic() < deadline, f"tick {k} never fired"
                time.sleep(0.002)
            # Let both sweepers scan again after the fire: a second fire would show here.
            seen = dict(passes)
            while any(passes[n] < seen.get(n, 0) + 2 for n in ("sweeper 1", "sweeper 2")):
                assert time.monotonic() < deadline, "a sweeper stopped sweeping"
                time.sleep(0.002)
    finally:
        stop.set()
        crew.join(30)
    assert not crew.problems, crew.problems

    expected = [BASE + dt.timedelta(minutes=k) for k in range(TICKS)]
    assert sorted(f.tick for f in fired) == expected
    assert all(f.todo_id and not f.skipped and f.ticks == 1 for f in fired)
    assert Todo.objects.count() == TICKS
    assert sorted(ScheduleRun.objects.values_list("tick", flat=True)) == expected
    assert sorted(Todo.objects.values_list("title", flat=True)) == [t.isoformat() for t in expected]
