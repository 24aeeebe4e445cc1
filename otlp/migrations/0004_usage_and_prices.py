"""A model call's usage and cost on its span row (NULL on every other span), the price table,
and the per-endpoint, queue and hour usage rollup (otlp/usage.py, otlp/prices.py,
otlp/sql/store.sql, otlp/sql/rollup.sql)."""

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("otlp", "0003_span_refusals"),
        ("switchboard", "0007_endpoint_budget"),
    ]

    operations = [
        migrations.AddField(
            model_name="todospan",
            name="cache_read_tokens",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="todospan",
            name="cache_write_tokens",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="todospan",
            name="cost_usd",
            field=models.DecimalField(blank=True, decimal_places=12, max_digits=24, null=True),
        ),
        migrations.AddField(
            model_name="todospan",
            name="input_tokens",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="todospan",
            name="model",
            field=models.TextField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="todospan",
            name="output_tokens",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="todospan",
            name="reasoning_tokens",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.CreateModel(
            name="Price",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("model", models.TextField()),
                ("provider", models.TextField(blank=True, db_default="", default="")),
                ("effective_from", models.DateField()),
                (
                    "input",
                    models.DecimalField(blank=True, decimal_places=6, max_digits=14, null=True),
                ),
                (
                    "output",
                    models.DecimalField(blank=True, decimal_places=6, max_digits=14, null=True),
                ),
                (
                    "cache_read",
                    models.DecimalField(blank=True, decimal_places=6, max_digits=14, null=True),
                ),
                (
                    "cache_write",
                    models.DecimalField(blank=True, decimal_places=6, max_digits=14, null=True),
                ),
                (
                    "reasoning",
                    models.DecimalField(blank=True, decimal_places=6, max_digits=14, null=True),
                ),
                ("source", models.TextField(blank=True, db_default="", default="")),
                (
                    "updated_at",
                    models.DateTimeField(db_default=django.db.models.functions.datetime.Now()),
                ),
            ],
            options={
                "db_table": "prices",
                "ordering": ["model", "provider", "effective_from"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("model", "provider", "effective_from"), name="prices_model_from_key"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("input__gte", 0), ("input__isnull", True), _connector="OR"
                        ),
                        name="prices_input_not_negative",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("output__gte", 0), ("output__isnull", True), _connector="OR"
                        ),
                        name="prices_output_not_negative",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("cache_read__gte", 0), ("cache_read__isnull", True), _connector="OR"
                        ),
                        name="prices_cache_read_not_negative",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("cache_write__gte", 0), ("cache_write__isnull", True), _connector="OR"
                        ),
                        name="prices_cache_write_not_negative",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("reasoning__gte", 0), ("reasoning__isnull", True), _connector="OR"
                        ),
                        name="prices_reasoning_not_negative",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="UsageHour",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "endpoint_id",
                        "queue",
                        "hour",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("queue", models.TextField()),
                ("hour", models.DateTimeField()),
                ("input_tokens", models.BigIntegerField(db_default=0, default=0)),
                ("output_tokens", models.BigIntegerField(db_default=0, default=0)),
                ("cache_read_tokens", models.BigIntegerField(db_default=0, default=0)),
                ("cache_write_tokens", models.BigIntegerField(db_default=0, default=0)),
                ("reasoning_tokens", models.BigIntegerField(db_default=0, default=0)),
                ("unpriced_tokens", models.BigIntegerField(db_default=0, default=0)),
                (
                    "cost_usd",
                    models.DecimalField(db_default=0, decimal_places=12, default=0, max_digits=24),
                ),
                (
                    "endpoint",
                    models.ForeignKey(
                        db_column="endpoint_id",
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="switchboard.endpoint",
                    ),
                ),
            ],
            options={
                "db_table": "usage_hours",
                "ordering": ["endpoint_id", "queue", "hour"],
            },
        ),
    ]
