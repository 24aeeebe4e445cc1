"""todo_span_counts: how many spans each todo stores, per attempt, kept by the store as it writes.

Before this, every span batch counted its todos' spans in ``todo_spans`` (a GROUP BY over
``idx_todo_spans_attempt``) to hold them to the caps: a read that grew with every span the todo
held, so a todo near its cap paid for thousands of index entries per batch (about 15 ms of
PostgreSQL for 17,000 spans). Now ``otlp/sql/store.sql`` adds what each batch wrote (less the
stored copies it replaced) to one row per todo and attempt, under the todo's advisory lock, and
``otlp/sql/counts.sql`` reads those rows: a batch's count costs one index probe per attempt,
however many spans the todo holds (docs/decisions/0042-span-counts-on-rows.md).

``spans`` has no CHECK against going negative: an upsert's proposed row is checked before
its conflict is found, and a span that moved to another attempt proposes -1 for the one it
left (whose row exists: it was counted there when written).

``attempt_seq`` 0 stands for spans bound to the todo with no attempt (a primary key column
cannot be NULL; attempts are numbered from 1). The rows count what was stored, not what is held
now: span retention drops a day's partition without touching them, so a long-lived todo's cap
counts every span it ever stored. Forgetting a todo deletes its rows with its spans
(``otlp/sql/forget.sql``); deleting it, by cascade.

Forward: the table, then today's counts from ``todo_spans``, read under a SHARE lock that holds
off span batches until the migration commits (a batch waits, it is not refused). Stop the old
receivers first (docs/guides/operations.md, "Upgrading"): spans their code stores afterwards are
not counted. Reverse: the table goes; the counts are again read from the spans.
"""

import django.db.models.deletion
from django.db import migrations, models

FORWARD = """
CREATE TABLE todo_span_counts (
    todo_id     text NOT NULL REFERENCES todos(id) ON DELETE CASCADE,
    attempt_seq int  NOT NULL CHECK (attempt_seq >= 0),
    spans       int  NOT NULL,
    PRIMARY KEY (todo_id, attempt_seq)
);
LOCK TABLE todo_spans IN SHARE MODE;
INSERT INTO todo_span_counts (todo_id, attempt_seq, spans)
SELECT todo_id, coalesce(attempt_seq, 0), count(*)
  FROM todo_spans
 GROUP BY 1, 2;
"""
REVERSE = "DROP TABLE todo_span_counts;"


class Migration(migrations.Migration):
    dependencies = [("otlp", "0006_partitioned_spans")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, REVERSE)],
            state_operations=[
                migrations.CreateModel(
                    name="TodoSpanCount",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "todo",
                                "attempt_seq",
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
                                related_name="span_counts",
                                to="todos.todo",
                            ),
                        ),
                        ("attempt_seq", models.IntegerField()),
                        ("spans", models.IntegerField()),
                    ],
                    options={
                        "db_table": "todo_span_counts",
                        "ordering": ["todo_id", "attempt_seq"],
                    },
                ),
            ],
        ),
    ]
