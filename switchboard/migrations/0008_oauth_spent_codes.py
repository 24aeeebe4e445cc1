"""Exchanged OAuth authorization codes, by their SHA-256 only, with what each exchange issued, so
that a second exchange of a code revokes it (RFC 6749 §4.1.2; ``switchboard/oauth.py``). A new
table: reversed by dropping it."""

import django.db.models.functions.text
import django.db.models.lookups
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("switchboard", "0007_endpoint_budget"),
    ]

    operations = [
        migrations.CreateModel(
            name="SpentCode",
            fields=[
                ("digest", models.BinaryField(primary_key=True, serialize=False)),
                ("access_token_id", models.BigIntegerField(editable=False, null=True)),
                ("token_family", models.UUIDField(editable=False, null=True)),
                ("spent_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "db_table": "oauth_spent_codes",
                "constraints": [
                    models.CheckConstraint(
                        condition=django.db.models.lookups.Exact(
                            django.db.models.functions.text.Length("digest"), 32
                        ),
                        name="oauth_spent_codes_digest_check",
                    )
                ],
            },
        ),
    ]
