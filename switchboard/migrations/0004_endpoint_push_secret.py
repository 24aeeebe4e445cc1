"""endpoints.push_secret: the key push rings are signed with (``todos/push.py``).

Kept as sources keep their webhook secrets (``todos/models.py`` ``Source.secret``): the server
must sign with it, so it cannot be stored as a hash. Empty until the endpoint has a push URL;
``switchboard/credentials.py`` mints it and shows it once.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("switchboard", "0003_a2a_verbs")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE endpoints ADD COLUMN push_secret text NOT NULL DEFAULT ''",
                    "ALTER TABLE endpoints DROP COLUMN push_secret",
                )
            ],
            state_operations=[
                migrations.AddField(
                    model_name="endpoint",
                    name="push_secret",
                    field=models.TextField(blank=True, db_default="", default="", editable=False),
                ),
            ],
        )
    ]
