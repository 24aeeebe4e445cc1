"""todo_spans and todo_trace_bindings: the spans agents export, bound to their todos.

Hand-written SQL for the CHECKs (id lengths, byte caps, the status list, the size of
``attributes``, ``end_at >= start_at``); ``state_operations`` keep Django's model state in step,
so ``makemigrations --check`` stays clean. Each index names the query it serves. Both tables are
new: nothing to backfill, and creating them locks nothing in use.
"""

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models

FORWARD = """
CREATE TABLE todo_spans (
    todo_id         text        NOT NULL REFERENCES todos(id) ON DELETE CASCADE,
    trace_id        bytea       NOT NULL CHECK (octet_length(trace_id) = 16),
    span_id         bytea       NOT NULL CHECK (octet_length(span_id) = 8),
    parent_span_id  bytea       CHECK (octet_length(parent_span_id) = 8),
    attempt_seq     int,
    name            text        NOT NULL CHECK (octet_length(name) <= 256),
    kind            text        NOT NULL,
    category        text        NOT NULL CHECK (octet_length(category) BETWEEN 1 AND 64),
    tool            text        CHECK (octet_length(tool) <= 128),
    status_code     text        NOT NULL DEFAULT 'unset' CHECK (status_code IN ('unset','ok','error')),
    status_message  text        CHECK (octet_length(status_message) <= 512),
    service_name    text        CHECK (octet_length(service_name) <= 128),
    start_at        timestamptz NOT NULL,
    end_at          timestamptz NOT NULL CHECK (end_at >= start_at),
    attributes      jsonb       NOT NULL DEFAULT '{}' CHECK (octet_length(attributes::text) <= 16384),
    truncated       boolean     NOT NULL DEFAULT false,
    received_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (todo_id, trace_id, span_id)
);
-- Serves: an attempt's spans in start order for its waterfall (todo_id = $1 AND attempt_seq =
-- $2 ORDER BY start_at LIMIT $3), and the receiver's span counts against the per-attempt and
-- per-todo caps (todo_id = ANY($1) GROUP BY todo_id, attempt_seq).
CREATE INDEX idx_todo_spans_attempt ON todo_spans (todo_id, attempt_seq, start_at);

CREATE TABLE todo_trace_bindings (
    todo_id   text  NOT NULL REFERENCES todos(id) ON DELETE CASCADE,
    trace_id  bytea NOT NULL CHECK (octet_length(trace_id) = 16),
    PRIMARY KEY (todo_id, trace_id)
);
-- Serves: the receiver's third binding rule, an earlier binding of the same trace
-- (s.trace_id = ANY($trace_ids)).
CREATE INDEX idx_todo_trace_bindings_trace ON todo_trace_bindings (trace_id);
"""

REVERSE = """
DROP TABLE todo_trace_bindings;
DROP TABLE todo_spans;
"""


class Migration(migrations.Migration):
    initial = True

    dependencies = [("todos", "0005_spans_dropped"), ("attempts", "0003_trace")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, REVERSE)],
            state_operations=[
                migrations.CreateModel(
                    name="TodoSpan",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "todo",
                                "trace_id",
                                "span_id",
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
                                related_name="spans",
                                to="todos.todo",
                            ),
                        ),
                        ("trace_id", models.BinaryField()),
                        ("span_id", models.BinaryField()),
                        ("parent_span_id", models.BinaryField(blank=True, null=True)),
                        ("attempt_seq", models.IntegerField(blank=True, null=True)),
                        ("name", models.TextField()),
                        ("kind", models.TextField()),
                        ("category", models.TextField()),
                        ("tool", models.TextField(blank=True, null=True)),
                        (
                            "status_code",
                            models.TextField(
                                choices=[("unset", "Unset"), ("ok", "Ok"), ("error", "Error")],
                                db_default="unset",
                                default="unset",
                            ),
                        ),
                        ("status_message", models.TextField(blank=True, null=True)),
                        ("service_name", models.TextField(blank=True, null=True)),
                        ("start_at", models.DateTimeField()),
                        ("end_at", models.DateTimeField()),
                        ("attributes", models.JSONField(db_default={}, default=dict)),
                        ("truncated", models.BooleanField(db_default=False, default=False)),
                        (
                            "received_at",
                            models.DateTimeField(
                                db_default=django.db.models.functions.datetime.Now()
                            ),
                        ),
                    ],
                    options={
                        "db_table": "todo_spans",
                        "ordering": ["todo_id", "attempt_seq", "start_at"],
                        "indexes": [
                            models.Index(
                                fields=["todo", "attempt_seq", "start_at"],
                                name="idx_todo_spans_attempt",
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="TodoTraceBinding",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "todo",
                                "trace_id",
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
                                related_name="trace_bindings",
                                to="todos.todo",
                            ),
                        ),
                        ("trace_id", models.BinaryField()),
                    ],
                    options={
                        "db_table": "todo_trace_bindings",
                        "ordering": ["todo_id"],
                        "indexes": [
                            models.Index(fields=["trace_id"], name="idx_todo_trace_bindings_trace")
                        ],
                    },
                ),
            ],
        )
    ]
