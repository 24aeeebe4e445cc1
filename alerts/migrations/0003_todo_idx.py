"""``alerts_todo_idx``: a todo's alerts, looked up by todo (alerts/sql/forgotten_alerts.sql)
when forgetting a todo rewrites its alerts without its content and when retention, deleting it,
also unlinks them. Only the alerts about a todo enter it (queues', endpoints' and budgets' have
none). Built concurrently: the sweeper keeps opening alerts meanwhile.
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
