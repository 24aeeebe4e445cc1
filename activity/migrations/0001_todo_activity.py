"""todo_activity: one row per thing that happened to a todo that no other table records.

Progress notes, Board actions, retries, A2A transitions and doorbell rings. Rows are numbered
per todo (``seq``, from ``todos.activity_seq``, todos/migrations/0004) and go with their todo
(ON DELETE CASCADE). Hand-written SQL for the CHECKs (byte caps, the two value lists, the size of
``detail``); ``state_operations`` keep Django's model state in step, so ``makemigrations
--check`` stays clean. Each index names the query it serves. The table is new: nothing to
backfill, and creating it locks nothing in use.
"""

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models

FORWARD = """
CREATE TABLE todo_activity (
    todo_id      text        NOT NULL REFERENCES todos(id) ON DELETE CASCADE,
    seq          bigint      NOT NULL,
    attempt_seq  int,
    at           timestamptz NOT NULL DEFAULT now(),
    kind         text        NOT NULL CHECK (kind IN ('note','human_action','retried','a2a_state','rung')),
    actor_kind   text        NOT NULL CHECK (actor_kind IN ('endpoint','human','system')),
    actor_ref    text        NOT NULL CHECK (octet_length(actor_ref) <= 128),
    message      text        CHECK (octet_length(message) <= 512),
    truncated    boolean     NOT NULL DEFAULT false,
    detail       jsonb       NOT NULL DEFAULT '{}' CHECK (octet_length(detail::text) <= 4096),
    PRIMARY KEY (todo_id, seq)
);
-- Serves: the heartbeat's count of an attempt's notes against their cap
-- (todo_id = $1 AND attempt_seq = $2 AND kind = 'note').
CREATE INDEX idx_todo_activity_note ON todo_activity (todo_id, attempt_seq) WHERE kind = 'note';
-- Serves: the Activity feed's activity arm, newest first from a keyset cursor (at < $cursor
-- ORDER BY at DESC), and its unread count (at > humans.activity_seen_at).
CREATE INDEX idx_todo_activity_at ON todo_activity (at DESC);
"""

REVERSE = "DROP TABLE todo_activity"


class Migration(migrations.Migration):
    initial = True

    dependencies = [("todos", "0004_activity_seq")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, REVERSE)],
            state_operations=[
                migrations.CreateModel(
                    name="TodoActivity",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "todo",
                                "seq",
                                blank=True,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        (
                            "todo",
                            models.ForeignKey(
                                db_column="todo_id",
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="activity",
                                to="todos.todo",
                            ),
                        ),
                        ("seq", models.BigIntegerField()),
                        ("attempt_seq", models.IntegerField(blank=True, null=True)),
                        (
                            "at",
                            models.DateTimeField(
                                db_default=django.db.models.functions.datetime.Now()
                            ),
                        ),
                        (
                            "kind",
                            models.TextField(
                                choices=[
                                    ("note", "Note"),
                                    ("human_action", "Human Action"),
                                    ("retried", "Retried"),
                                    ("a2a_state", "A2A State"),
                                    ("rung", "Rung"),
                                ]
                            ),
                        ),
                        (
                            "actor_kind",
                            models.TextField(
                                choices=[
                                    ("endpoint", "Endpoint"),
                                    ("human", "Human"),
                                    ("system", "System"),
                                ]
                            ),
                        ),
                        ("actor_ref", models.TextField()),
                        ("message", models.TextField(blank=True, null=True)),
                        ("truncated", models.BooleanField(db_default=False, default=False)),
                        ("detail", models.JSONField(db_default={}, default=dict)),
                    ],
                    options={
                        "verbose_name": "todo activity",
                        "verbose_name_plural": "todo activity",
                        "db_table": "todo_activity",
                        "ordering": ["todo_id", "seq"],
                        "indexes": [
                            models.Index(
                                condition=models.Q(("kind", "note")),
                                fields=["todo", "attempt_seq"],
                                name="idx_todo_activity_note",
                            ),
                            models.Index(fields=["-at"], name="idx_todo_activity_at"),
                        ],
                    },
                ),
            ],
        )
    ]
