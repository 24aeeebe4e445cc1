"""queue_settings: one row per endpoint and queue that has limits or a default run timeout.

A queue is a name on todos with no row of its own; this row exists only once an operator sets
something on the queue, so an unlimited queue has no row and its claims find none (one probe of
the primary key). Written only by ``todos.lifecycle.queues`` (``set_queue_limits.sql``) and by
the claims that spend its rate tokens (``_queue_spend.sql``); the model mirrors it for reads and
the admin. Decision: docs/decisions/0028-queue-limits.md.

- ``max_in_flight``: at most this many of the queue's todos held by agents (a live lease, or
  paused for a human); NULL: no limit.
- ``claims_per_minute``: a token bucket (``tokens`` as of ``refilled_at``; capacity and refill
  per minute both the rate); NULL: no limit.
- ``run_timeout_seconds``: the default run timeout of the queue's todos that set none.
"""

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models

SQL = """
CREATE TABLE queue_settings (
    id                   bigserial PRIMARY KEY,
    endpoint_id          uuid NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
    queue                text NOT NULL,
    max_in_flight        int CHECK (max_in_flight >= 0),
    claims_per_minute    int CHECK (claims_per_minute >= 0),
    tokens               real NOT NULL DEFAULT 0,
    refilled_at          timestamptz NOT NULL DEFAULT now(),
    run_timeout_seconds  int CHECK (run_timeout_seconds >= 10),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    updated_by           text NOT NULL,
    -- Serves: every claim's probe for its queue's row (_queue_limited.sql), the writer's
    -- upsert (its conflict target) and the Board's per-endpoint list.
    CONSTRAINT queue_settings_queue_key UNIQUE (endpoint_id, queue)
);
"""

REVERSE = "DROP TABLE queue_settings;"


class Migration(migrations.Migration):
    # Follows the time controls' migration (0015_todo_time) where both are present; the lead
    # renumbers the dependency when the branches meet.
    dependencies = [("todos", "0015_todo_time")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(SQL, REVERSE)],
            state_operations=[
                migrations.CreateModel(
                    name="QueueSettings",
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
                        (
                            "endpoint",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="queue_settings",
                                to="switchboard.endpoint",
                            ),
                        ),
                        ("queue", models.TextField()),
                        ("max_in_flight", models.IntegerField(blank=True, null=True)),
                        ("claims_per_minute", models.IntegerField(blank=True, null=True)),
                        ("tokens", models.FloatField(db_default=0)),
                        (
                            "refilled_at",
                            models.DateTimeField(
                                db_default=django.db.models.functions.datetime.Now()
                            ),
                        ),
                        ("run_timeout_seconds", models.IntegerField(blank=True, null=True)),
                        (
                            "updated_at",
                            models.DateTimeField(
                                db_default=django.db.models.functions.datetime.Now()
                            ),
                        ),
                        ("updated_by", models.TextField()),
                    ],
                    options={
                        "db_table": "queue_settings",
                        "ordering": ["endpoint", "queue"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("endpoint", "queue"), name="queue_settings_queue_key"
                            )
                        ],
                    },
                ),
            ],
        )
    ]
