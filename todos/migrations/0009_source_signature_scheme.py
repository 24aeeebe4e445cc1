"""sources.scheme: how a verifying source's deliveries are signed (``SignatureScheme``).

``github`` (the only scheme before: an HMAC of the body) or ``standard-webhooks`` (an HMAC of
the delivery id, the timestamp and the body; todos/intake/routing.py). The CHECK lists the
model's choices, as every value list in the schema does. A constant default: no rewrite.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("todos", "0008_rejected_event_body_digest")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE sources ADD COLUMN scheme text NOT NULL DEFAULT 'github'"
                    " CHECK (scheme IN ('github', 'standard-webhooks'))",
                    "ALTER TABLE sources DROP COLUMN scheme",
                )
            ],
            state_operations=[
                migrations.AddField(
                    model_name="source",
                    name="scheme",
                    field=models.TextField(
                        choices=[
                            ("github", "Github"),
                            ("standard-webhooks", "Standard Webhooks"),
                        ],
                        db_default="github",
                        default="github",
                    ),
                )
            ],
        )
    ]
