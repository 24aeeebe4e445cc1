"""The activity kind ``deadline``: the sweeper dead-lettered a todo whose start_by or finish_by
passed (todos/sql/deadlines.sql); its detail says which (``reason``)."""

from django.db import migrations, models

KINDS = "'note','human_action','retried','a2a_state','rung'"
FORWARD = f"""
ALTER TABLE todo_activity DROP CONSTRAINT todo_activity_kind_check,
    ADD CONSTRAINT todo_activity_kind_check CHECK (kind IN ({KINDS},'deadline'));
"""
REVERSE = f"""
ALTER TABLE todo_activity DROP CONSTRAINT todo_activity_kind_check,
    ADD CONSTRAINT todo_activity_kind_check CHECK (kind IN ({KINDS}));
"""


class Migration(migrations.Migration):
    dependencies = [("activity", "0002_actor_spellings")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, REVERSE)],
            state_operations=[
                migrations.AlterField(
                    model_name="todoactivity",
                    name="kind",
                    field=models.TextField(
                        choices=[
                            ("note", "Note"),
                            ("human_action", "Human Action"),
                            ("retried", "Retried"),
                            ("a2a_state", "A2A State"),
                            ("rung", "Rung"),
                            ("deadline", "Deadline"),
                        ]
                    ),
                ),
            ],
        ),
    ]
