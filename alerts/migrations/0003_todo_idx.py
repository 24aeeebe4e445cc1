"""``alerts_todo_idx``: a todo's alerts, for the two statements that look them up by todo:
forgetting a todo rewrites its alerts without its content (alerts/sql/forgotten_alerts.sql) and
retention unlinks the alerts of the todos it deletes (todos/sql/retention_todos.sql). Only the
alerts about a todo enter it (queues', endpoints' and budgets' have none). Built concurrently:
the sweeper keeps opening alerts meanwhile.
"""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("alerts", "0002_channel_team")]

    operations = [
        AddIndexConcurrently(
            model_name="alert",
            index=models.Index(
                condition=models.Q(todo_id__isnull=False),
                fields=["todo_id"],
                name="alerts_todo_idx",
            ),
        ),
    ]
