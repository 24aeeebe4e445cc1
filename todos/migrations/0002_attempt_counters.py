"""todos.attempts_total and todos.attempts_pruned (attempt history).

ADD COLUMN … DEFAULT 0 is a metadata-only change on PostgreSQL 11 and newer, so this is cheap on
a large table. The backfill that needs the table comes with attempts/0001_todo_attempts.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("todos", "0001_base_schema")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE todos ADD COLUMN attempts_total int NOT NULL DEFAULT 0;"
                    " ALTER TABLE todos ADD COLUMN attempts_pruned int NOT NULL DEFAULT 0;",
                    "ALTER TABLE todos DROP COLUMN attempts_pruned;"
                    " ALTER TABLE todos DROP COLUMN attempts_total;",
                )
            ],
            state_operations=[
                migrations.AddField(
                    model_name="todo",
                    name="attempts_total",
                    field=models.IntegerField(db_default=0, default=0),
                ),
                migrations.AddField(
                    model_name="todo",
                    name="attempts_pruned",
                    field=models.IntegerField(db_default=0, default=0),
                ),
            ],
        )
    ]
