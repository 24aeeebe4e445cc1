"""queue_pauses: an endpoint's queue paused by a human (or the system), and resumed.

One row per pause: open (``resumed_at`` NULL) while the queue is paused, closed by the resume,
and kept after, so the table is also the record of who paused and resumed which queue when (a
queue is a name on todos, with no row of its own, and ``todo_activity`` rows belong to a todo).
Written only by ``todos.lifecycle`` (``pause_queue.sql``, ``resume_queue.sql``); the model
mirrors it for reads and the admin. Decision: docs/decisions/0020-queue-pause-and-bulk-actions.md.

- ``queue_pauses_open_idx``: at most one open pause per queue, and the probe every claim makes
  (``_queue_open.sql``): one index lookup, whatever the history holds.
"""

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models

SQL = """
CREATE TABLE queue_pauses (
    id               bigserial PRIMARY KEY,
    endpoint_id      uuid NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
    queue            text NOT NULL,
    paused_at        timestamptz NOT NULL DEFAULT now(),
    paused_by_kind   text NOT NULL CHECK (paused_by_kind IN ('human', 'system')),
    paused_by        text NOT NULL,
    resumed_at       timestamptz,
    resumed_by_kind  text CHECK (resumed_by_kind IN ('human', 'system')),
    resumed_by       text,
    CONSTRAINT queue_pauses_resumed_whole CHECK (
        (resumed_at IS NULL) = (resumed_by IS NULL)
        AND (resumed_at IS NULL) = (resumed_by_kind IS NULL))
);
-- Serves: the claim's probe "is this queue paused" (_queue_open.sql), the Board's paused queues,
-- and keeps one open pause per queue.
CREATE UNIQUE INDEX queue_pauses_open_idx ON queue_pauses (endpoint_id, queue)
    WHERE resumed_at IS NULL;
"""

REVERSE = "DROP TABLE queue_pauses;"


class Migration(migrations.Migration):
    dependencies = [("todos", "0009_source_signature_scheme")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(SQL, REVERSE)],
            state_operations=[
                migrations.CreateModel(
                    name="QueuePause",
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
                        (
                            "paused_at",
                            models.DateTimeField(
                                db_default=django.db.models.functions.datetime.Now()
                            ),
                        ),
                        (
                            "paused_by_kind",
                            models.TextField(choices=[("human", "Human"), ("system", "System")]),
                        ),
                        ("paused_by", models.TextField()),
                        ("resumed_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "resumed_by_kind",
                            models.TextField(
                                blank=True,
                                choices=[("human", "Human"), ("system", "System")],
                                null=True,
                            ),
                        ),
                        ("resumed_by", models.TextField(blank=True, null=True)),
                        (
                            "endpoint",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="queue_pauses",
                                to="switchboard.endpoint",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "queue_pauses",
                        "ordering": ["-id"],
                        "indexes": [],
                        "constraints": [
                            models.UniqueConstraint(
                                condition=models.Q(("resumed_at__isnull", True)),
                                fields=("endpoint", "queue"),
                                name="queue_pauses_open_idx",
                            )
                        ],
                    },
                ),
            ],
        )
    ]
