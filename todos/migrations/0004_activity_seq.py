"""todos.activity_seq: the last ``seq`` handed to one of the todo's ``todo_activity`` rows.

The statement that writes an activity row bumps it (``UPDATE todos SET activity_seq =
activity_seq + 1 … RETURNING``) while it holds the todo's row lock for the transition anyway, so
numbering needs no sequence and has no contention of its own. ADD COLUMN … DEFAULT 0 is a
metadata-only change on PostgreSQL 11 and newer: no rewrite of a large table.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("todos", "0003_lease_copy")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE todos ADD COLUMN activity_seq bigint NOT NULL DEFAULT 0",
                    "ALTER TABLE todos DROP COLUMN activity_seq",
                )
            ],
            state_operations=[
                migrations.AddField(
                    model_name="todo",
                    name="activity_seq",
                    field=models.BigIntegerField(db_default=0, default=0),
                ),
            ],
        )
    ]
