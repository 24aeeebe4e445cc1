"""span_refusals: per endpoint and minute, how many spans its exporters sent that were refused,
by reason (unbound, over a cap, invalid), so the fleet can show them over the last hour and
day. Before this only ``/metrics`` counted them, and the exporters most agents use drop the
OTLP partial-success message they are told, so unbound spans vanished silently.

Written by ``otlp/store.py`` (``record_refusals``), one upsert per request that refused any
span, never for a clean one; the same statement deletes the endpoint's rows older than two
days, so an endpoint keeps at most about 2,900 rows. The primary key (endpoint_id, minute) is
the upsert's arbiter and the fleet's range read.
"""

import django.db.models.deletion
from django.db import migrations, models

FORWARD = """
CREATE TABLE span_refusals (
    endpoint_id uuid NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
    minute      timestamptz NOT NULL,
    unbound     int NOT NULL DEFAULT 0 CHECK (unbound >= 0),
    over_cap    int NOT NULL DEFAULT 0 CHECK (over_cap >= 0),
    invalid     int NOT NULL DEFAULT 0 CHECK (invalid >= 0),
    PRIMARY KEY (endpoint_id, minute)
);
"""
REVERSE = "DROP TABLE span_refusals;"


class Migration(migrations.Migration):
    dependencies = [("otlp", "0002_token_count"), ("switchboard", "0004_endpoint_push_secret")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, REVERSE)],
            state_operations=[
                migrations.CreateModel(
                    name="SpanRefusals",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "endpoint",
                                "minute",
                                blank=True,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        (
                            "endpoint",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="span_refusals",
                                to="switchboard.endpoint",
                            ),
                        ),
                        ("minute", models.DateTimeField()),
                        ("unbound", models.IntegerField(db_default=0, default=0)),
                        ("over_cap", models.IntegerField(db_default=0, default=0)),
                        ("invalid", models.IntegerField(db_default=0, default=0)),
                    ],
                    options={"db_table": "span_refusals", "ordering": ["endpoint_id", "minute"]},
                ),
            ],
        ),
    ]
