"""todos.spans_dropped: spans refused once the todo held its span cap (``otlp/store.py``).

ADD COLUMN … DEFAULT 0 is a metadata-only change on PostgreSQL 11 and newer: no rewrite.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("todos", "0004_activity_seq")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE todos ADD COLUMN spans_dropped int NOT NULL DEFAULT 0",
                    "ALTER TABLE todos DROP COLUMN spans_dropped",
                )
            ],
            state_operations=[
                migrations.AddField(
                    model_name="todo",
                    name="spans_dropped",
                    field=models.IntegerField(db_default=0, default=0),
                ),
            ],
        )
    ]
