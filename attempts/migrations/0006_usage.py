"""An attempt's token usage and cost, kept by the OTLP ingest (otlp/sql/store.py); the outcome
``budget_exceeded``: its todo's cost passed its max_cost_usd while it was open and the sweep
closed it (todos/sql/over_cap.sql)."""

from django.db import migrations, models

OUTCOMES = (
    "'completed','failed','released','lease_expired','reaped','canceled','revoked','timed_out'"
)
FORWARD = f"""
ALTER TABLE todo_attempts DROP CONSTRAINT todo_attempts_outcome_check,
    ADD CONSTRAINT todo_attempts_outcome_check CHECK (outcome IN ({OUTCOMES},'budget_exceeded'));
"""
REVERSE = f"""
ALTER TABLE todo_attempts DROP CONSTRAINT todo_attempts_outcome_check,
    ADD CONSTRAINT todo_attempts_outcome_check CHECK (outcome IN ({OUTCOMES}));
"""


class Migration(migrations.Migration):
    dependencies = [
        ("attempts", "0005_timed_out"),
    ]

    operations = [
        migrations.RunSQL(FORWARD, REVERSE),
        migrations.AddField(
            model_name="todoattempt",
            name="cache_read_tokens",
            field=models.BigIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.AddField(
            model_name="todoattempt",
            name="cache_write_tokens",
            field=models.BigIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.AddField(
            model_name="todoattempt",
            name="cost_usd",
            field=models.DecimalField(
                db_default=0, decimal_places=12, default=0, editable=False, max_digits=24
            ),
        ),
        migrations.AddField(
            model_name="todoattempt",
            name="input_tokens",
            field=models.BigIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.AddField(
            model_name="todoattempt",
            name="output_tokens",
            field=models.BigIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.AddField(
            model_name="todoattempt",
            name="reasoning_tokens",
            field=models.BigIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.AddField(
            model_name="todoattempt",
            name="unpriced_tokens",
            field=models.BigIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.AlterField(
            model_name="todoattempt",
            name="outcome",
            field=models.TextField(
                blank=True,
                choices=[
                    ("completed", "Completed"),
                    ("failed", "Failed"),
                    ("released", "Released"),
                    ("lease_expired", "Lease Expired"),
                    ("reaped", "Reaped"),
                    ("canceled", "Canceled"),
                    ("revoked", "Revoked"),
                    ("timed_out", "Timed Out"),
                    ("budget_exceeded", "Budget Exceeded"),
                ],
                null=True,
            ),
        ),
    ]
