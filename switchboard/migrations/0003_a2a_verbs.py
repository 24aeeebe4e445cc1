"""The A2A verbs: ``request_input`` and ``reject`` (the holder's MCP tools) and ``a2a`` (the
requester's door at /a2a/{slug}); the CHECK on endpoints.verbs learns them."""

import django.contrib.postgres.fields
from django.db import migrations, models

_OLD = "'list_todos','get_todo','claim_next','claim','heartbeat','complete','fail','release'"
_NEW = _OLD + ",'request_input','reject','a2a'"


def _check(verbs: str) -> str:
    return (
        "ALTER TABLE endpoints DROP CONSTRAINT endpoints_known_verbs;"
        " ALTER TABLE endpoints ADD CONSTRAINT endpoints_known_verbs"
        f" CHECK (verbs <@ ARRAY[{verbs}]::text[]);"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("switchboard", "0002_activity_seen_at"),
    ]

    operations = [
        migrations.AlterField(
            model_name="endpoint",
            name="verbs",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.TextField(
                    choices=[
                        ("list_todos", "List Todos"),
                        ("get_todo", "Get Todo"),
                        ("claim_next", "Claim Next"),
                        ("claim", "Claim"),
                        ("heartbeat", "Heartbeat"),
                        ("complete", "Complete"),
                        ("fail", "Fail"),
                        ("release", "Release"),
                        ("request_input", "Request Input"),
                        ("reject", "Reject"),
                        ("a2a", "A2A"),
                    ]
                ),
                blank=True,
                default=list,
            ),
        ),
        # A reverse with endpoints holding the new verbs fails on the CHECK: revoke them first.
        migrations.RunSQL(sql=_check(_NEW), reverse_sql=_check(_OLD)),
    ]
