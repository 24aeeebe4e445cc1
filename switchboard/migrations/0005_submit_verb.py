"""The ``submit`` verb: a requester over MCP (``submit_todo`` and the tasks/* methods); the
CHECK on endpoints.verbs learns it."""

import django.contrib.postgres.fields
from django.db import migrations, models

_OLD = (
    "'list_todos','get_todo','claim_next','claim','heartbeat','complete','fail','release',"
    "'request_input','reject','a2a'"
)
_NEW = _OLD + ",'submit'"


def _check(verbs: str) -> str:
    return (
        "ALTER TABLE endpoints DROP CONSTRAINT endpoints_known_verbs;"
        " ALTER TABLE endpoints ADD CONSTRAINT endpoints_known_verbs"
        f" CHECK (verbs <@ ARRAY[{verbs}]::text[]);"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("switchboard", "0004_endpoint_push_secret"),
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
                        ("submit", "Submit"),
                    ]
                ),
                blank=True,
                default=list,
            ),
        ),
        # A reverse with endpoints holding the new verb fails on the CHECK: revoke them first.
        migrations.RunSQL(sql=_check(_NEW), reverse_sql=_check(_OLD)),
    ]
