"""humans.activity_seen_at: when the human last opened the Activity feed.

NULL until the first visit. The feed's unread badge counts the entries newer than it.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("switchboard", "0001_initial")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE humans ADD COLUMN activity_seen_at timestamptz",
                    "ALTER TABLE humans DROP COLUMN activity_seen_at",
                )
            ],
            state_operations=[
                migrations.AddField(
                    model_name="human",
                    name="activity_seen_at",
                    field=models.DateTimeField(blank=True, editable=False, null=True),
                ),
            ],
        )
    ]
