"""Push rings and the unclaimed-ring sweep (docs/decisions/0015-rings-never-lost.md).

- ``push_attempts``: one row per push ring to an endpoint's ``push_url``: queued by the ring
  statements (``todos/sql/ring.sql``, ``ring_due.sql``) in the transaction that takes the gate,
  sent by the sweeper (``todos/push.py``), with its tries and the last status code. The Board's
  endpoint page lists the newest.
- ``push_circuits``: each endpoint's circuit breaker: failed tries in a row, and until when it
  is open. No model (only raw SQL touches it), so ``endpoint_id`` is not a foreign key, as in
  ``mcp_server/migrations/0001_subscriptions.py``: Django's test flush truncates the endpoints
  table without this one, and a row of a deleted endpoint is harmless.
- ``todos_pending_ring_idx``: the ring sweep's scans, pending todos by their last ring.
"""

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models

SQL = """
CREATE TABLE push_attempts (
    id           bigserial PRIMARY KEY,
    endpoint_id  uuid NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
    todo_id      text REFERENCES todos(id) ON DELETE CASCADE,
    ring_id      uuid NOT NULL UNIQUE,
    queue        text NOT NULL DEFAULT '',
    reason       text NOT NULL,
    state        text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued','delivered','failed')),
    tries        int NOT NULL DEFAULT 0 CHECK (tries >= 0),
    status_code  int,
    error        text NOT NULL DEFAULT '',
    duration_ms  int,
    created_at   timestamptz NOT NULL DEFAULT now(),
    next_try_at  timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz
);
-- Serves: the sender, "queued pushes whose next try is due" (claim_pushes.sql).
CREATE INDEX push_attempts_due_idx ON push_attempts (next_try_at) WHERE state = 'queued';
-- Serves: the Board's "last pushes" of an endpoint, and the trim of old rows (record_push.sql).
CREATE INDEX push_attempts_endpoint_idx ON push_attempts (endpoint_id, id DESC);
-- Serves: ON DELETE CASCADE from todos (retention).
CREATE INDEX push_attempts_todo_idx ON push_attempts (todo_id) WHERE todo_id IS NOT NULL;

CREATE TABLE push_circuits (
    endpoint_id  uuid PRIMARY KEY,
    failures     int NOT NULL DEFAULT 0 CHECK (failures >= 0),
    open_until   timestamptz
);

-- Serves: ring_due.sql's scans, "pending todos by their last ring" (rung within the last minutes,
-- never rung). Partial: only pending rows enter it. Keyed on last_ringed_at, not updated_at: a
-- heartbeat writes updated_at, and an index on it would make every heartbeat a non-HOT update.
CREATE INDEX todos_pending_ring_idx ON todos (last_ringed_at) WHERE state = 'pending';
"""

REVERSE = """
DROP INDEX todos_pending_ring_idx;
DROP TABLE push_circuits;
DROP TABLE push_attempts;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("todos", "0006_claim_index_per_queue"),
        ("switchboard", "0004_endpoint_push_secret"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(SQL, REVERSE)],
            state_operations=[
                migrations.CreateModel(
                    name="PushAttempt",
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
                        ("ring_id", models.UUIDField(unique=True)),
                        ("queue", models.TextField(db_default="", default="")),
                        ("reason", models.TextField()),
                        (
                            "state",
                            models.TextField(
                                choices=[
                                    ("queued", "Queued"),
                                    ("delivered", "Delivered"),
                                    ("failed", "Failed"),
                                ],
                                db_default="queued",
                                default="queued",
                            ),
                        ),
                        ("tries", models.IntegerField(db_default=0, default=0)),
                        ("status_code", models.IntegerField(blank=True, null=True)),
                        ("error", models.TextField(blank=True, db_default="", default="")),
                        ("duration_ms", models.IntegerField(blank=True, null=True)),
                        (
                            "created_at",
                            models.DateTimeField(
                                db_default=django.db.models.functions.datetime.Now()
                            ),
                        ),
                        (
                            "next_try_at",
                            models.DateTimeField(
                                db_default=django.db.models.functions.datetime.Now()
                            ),
                        ),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "endpoint",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="push_attempts",
                                to="switchboard.endpoint",
                            ),
                        ),
                        (
                            "todo",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="push_attempts",
                                to="todos.todo",
                            ),
                        ),
                    ],
                    options={"db_table": "push_attempts", "ordering": ["-id"]},
                ),
            ],
        )
    ]
