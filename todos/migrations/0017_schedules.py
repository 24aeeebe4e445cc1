"""schedules and schedule_runs: cron schedules that create todos, and the ticks they fired.

Written only by ``todos.schedules`` (docs/decisions/0029-schedules.md); the models mirror the
tables for reads, the admin and factories.

- ``schedules_due_idx``: the sweeper's fire step, "enabled schedules whose next run is due",
  ordered by that time (``todos/schedules.py`` ``fire_due``).
- ``schedules_enabled_next_run``: an enabled schedule always has a next run; a paused one has
  none, so resuming recomputes it from the clock instead of firing a stale tick.
- ``schedule_runs_once``: one run per schedule and tick, the database's own guard behind the
  fire step's conditional UPDATE; it also serves the schedule page's "last runs".
- ``schedule_runs.todo_id`` is cleared by the database when retention deletes the todo in SQL.

The dependency is the newest migration on the branch this was written on; the queue-settings
and todo-time migrations number 0015 and 0016 around it.
"""

import django.db.models.deletion
import django.db.models.functions.datetime
from django.conf import settings
from django.db import migrations, models

SQL = """
CREATE TABLE schedules (
    id                     bigserial PRIMARY KEY,
    endpoint_id            uuid NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
    queue                  text NOT NULL,
    title_template         text NOT NULL,
    payload_template       jsonb NOT NULL DEFAULT '{}'::jsonb,
    work_order_template    text NOT NULL DEFAULT '',
    priority               integer NOT NULL DEFAULT 0 CHECK (priority BETWEEN -1000 AND 1000),
    start_within_seconds   integer CHECK (start_within_seconds > 0),
    finish_within_seconds  integer CHECK (finish_within_seconds > 0),
    run_timeout_seconds    integer CHECK (run_timeout_seconds >= 10),
    max_attempts           integer NOT NULL DEFAULT 5 CHECK (max_attempts BETWEEN 1 AND 1000),
    cron                   text NOT NULL,
    timezone               text NOT NULL DEFAULT 'UTC',
    enabled                boolean NOT NULL DEFAULT true,
    next_run_at            timestamptz,
    last_run_at            timestamptz,
    missed                 text NOT NULL DEFAULT 'skip',
    created_by_id          bigint REFERENCES humans(id) ON DELETE SET NULL,
    created_at             timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT schedules_missed_check CHECK (missed IN ('skip', 'run_once')),
    CONSTRAINT schedules_enabled_next_run CHECK (NOT enabled OR next_run_at IS NOT NULL)
);
CREATE INDEX schedules_endpoint_idx ON schedules (endpoint_id);
-- Serves: the fire step's due scan (fire_due): enabled schedules by next run.
CREATE INDEX schedules_due_idx ON schedules (next_run_at) WHERE enabled;

CREATE TABLE schedule_runs (
    id           bigserial PRIMARY KEY,
    schedule_id  bigint NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
    tick         timestamptz NOT NULL,
    fired_at     timestamptz NOT NULL DEFAULT now(),
    todo_id      text REFERENCES todos(id) ON DELETE SET NULL,
    ticks        integer NOT NULL DEFAULT 1,
    error        text NOT NULL DEFAULT '',
    -- One run per tick; serves the schedule page's last runs (newest first) and the prune.
    CONSTRAINT schedule_runs_once UNIQUE (schedule_id, tick)
);
CREATE INDEX schedule_runs_todo_idx ON schedule_runs (todo_id);
"""

REVERSE = "DROP TABLE schedule_runs; DROP TABLE schedules;"


class Migration(migrations.Migration):
    dependencies = [
        ("switchboard", "0004_endpoint_push_secret"),
        ("todos", "0016_queue_settings"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(SQL, REVERSE)],
            state_operations=[
                migrations.CreateModel(
                    name="Schedule",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("queue", models.TextField()),
                        ("title_template", models.TextField()),
                        (
                            "payload_template",
                            models.JSONField(blank=True, db_default={}, default=dict),
                        ),
                        (
                            "work_order_template",
                            models.TextField(blank=True, db_default="", default=""),
                        ),
                        ("priority", models.IntegerField(db_default=0, default=0)),
                        ("start_within_seconds", models.IntegerField(blank=True, null=True)),
                        ("finish_within_seconds", models.IntegerField(blank=True, null=True)),
                        ("run_timeout_seconds", models.IntegerField(blank=True, null=True)),
                        ("max_attempts", models.IntegerField(db_default=5, default=5)),
                        ("cron", models.TextField()),
                        ("timezone", models.TextField(db_default="UTC", default="UTC")),
                        ("enabled", models.BooleanField(db_default=True, default=True)),
                        ("next_run_at", models.DateTimeField(blank=True, null=True)),
                        ("last_run_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "missed",
                            models.TextField(
                                choices=[("skip", "Skip"), ("run_once", "Run Once")],
                                db_default="skip",
                                default="skip",
                            ),
                        ),
                        (
                            "created_at",
                            models.DateTimeField(
                                db_default=django.db.models.functions.datetime.Now()
                            ),
                        ),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "endpoint",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="schedules",
                                to="switchboard.endpoint",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "schedules",
                        "ordering": ["id"],
                    },
                ),
                migrations.CreateModel(
                    name="ScheduleRun",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("tick", models.DateTimeField()),
                        (
                            "fired_at",
                            models.DateTimeField(
                                db_default=django.db.models.functions.datetime.Now()
                            ),
                        ),
                        ("ticks", models.IntegerField(db_default=1, default=1)),
                        ("error", models.TextField(blank=True, db_default="", default="")),
                        (
                            "schedule",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="runs",
                                to="todos.schedule",
                            ),
                        ),
                        (
                            "todo",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="todos.todo",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "schedule_runs",
                        "ordering": ["-tick", "-id"],
                    },
                ),
                migrations.AddIndex(
                    model_name="schedule",
                    index=models.Index(
                        condition=models.Q(("enabled", True)),
                        fields=["next_run_at"],
                        name="schedules_due_idx",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="schedule",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("missed__in", ["skip", "run_once"])),
                        name="schedules_missed_check",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="schedule",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            ("enabled", False), ("next_run_at__isnull", False), _connector="OR"
                        ),
                        name="schedules_enabled_next_run",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="schedulerun",
                    constraint=models.UniqueConstraint(
                        fields=("schedule", "tick"), name="schedule_runs_once"
                    ),
                ),
            ],
        )
    ]
