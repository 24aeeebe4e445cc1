"""The activity kind ``budget``: the sweep dead-lettered a todo whose cost passed its
max_cost_usd (todos/sql/over_cap.sql)."""

from django.db import migrations, models

KINDS = "'note','human_action','retried','a2a_state','rung','deadline'"
FORWARD = f"""
ALTER TABLE todo_activity DROP CONSTRAINT todo_activity_kind_check,
    ADD CONSTRAINT todo_activity_kind_check CHECK (kind IN ({KINDS},'budget'));
"""
REVERSE = f"""
ALTER TABLE todo_activity DROP CONSTRAINT todo_activity_kind_check,
    ADD CONSTRAINT todo_activity_kind_check CHECK (kind IN ({KINDS}));
"""


class Migration(migrations.Migration):
    dependencies = [
        ("activity", "0003_deadline"),
    ]

    operations = [
        migrations.RunSQL(FORWARD, REVERSE),
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
                    ("budget", "Budget"),
                ]
            ),
        ),
    ]
