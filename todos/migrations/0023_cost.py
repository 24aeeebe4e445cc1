"""A todo's usage and cost (kept by the OTLP ingest) and its cost cap ``max_cost_usd`` (also on
a rule, for the todos it creates); a
queue's default cap and daily budget (queue_settings). The partial index serves the sweep that
ends todos past their cap (todos/sql/over_cap.sql): only capped unfinished todos enter it, so
a todo without a cap costs it nothing. A queue pause may carry a reason and an ``until`` (a
budget's pause, lifted by the sweeper at the next UTC midnight)."""

from django.db import migrations, models

FORWARD = """
ALTER TABLE todos ADD CONSTRAINT todos_max_cost_usd_check CHECK (max_cost_usd >= 0);
ALTER TABLE rules ADD CONSTRAINT rules_max_cost_usd_check CHECK (max_cost_usd >= 0);
ALTER TABLE queue_settings
    ADD CONSTRAINT queue_settings_default_max_cost_usd_check CHECK (default_max_cost_usd >= 0),
    ADD CONSTRAINT queue_settings_daily_budget_usd_check CHECK (daily_budget_usd >= 0);
-- Serves: todos/sql/over_cap.sql (capped, unfinished, cost at or past the cap).
CREATE INDEX todos_over_cap_idx ON todos (id)
    WHERE max_cost_usd IS NOT NULL AND finished_at IS NULL;
"""
REVERSE = """
DROP INDEX todos_over_cap_idx;
ALTER TABLE queue_settings DROP CONSTRAINT queue_settings_default_max_cost_usd_check,
    DROP CONSTRAINT queue_settings_daily_budget_usd_check;
ALTER TABLE rules DROP CONSTRAINT rules_max_cost_usd_check;
ALTER TABLE todos DROP CONSTRAINT todos_max_cost_usd_check;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("todos", "0022_claim_copies"),
    ]

    operations = [
        migrations.AddField(
            model_name="queuesettings",
            name="daily_budget_usd",
            field=models.DecimalField(blank=True, decimal_places=6, max_digits=14, null=True),
        ),
        migrations.AddField(
            model_name="queuesettings",
            name="default_max_cost_usd",
            field=models.DecimalField(blank=True, decimal_places=6, max_digits=14, null=True),
        ),
        migrations.AddField(
            model_name="todo",
            name="cache_read_tokens",
            field=models.BigIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.AddField(
            model_name="todo",
            name="cache_write_tokens",
            field=models.BigIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.AddField(
            model_name="todo",
            name="cost_usd",
            field=models.DecimalField(
                db_default=0, decimal_places=12, default=0, editable=False, max_digits=24
            ),
        ),
        migrations.AddField(
            model_name="todo",
            name="input_tokens",
            field=models.BigIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.AddField(
            model_name="todo",
            name="max_cost_usd",
            field=models.DecimalField(blank=True, decimal_places=6, max_digits=14, null=True),
        ),
        migrations.AddField(
            model_name="todo",
            name="output_tokens",
            field=models.BigIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.AddField(
            model_name="todo",
            name="reasoning_tokens",
            field=models.BigIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.AddField(
            model_name="todo",
            name="unpriced_tokens",
            field=models.BigIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.AddField(
            model_name="rule",
            name="max_cost_usd",
            field=models.DecimalField(blank=True, decimal_places=6, max_digits=14, null=True),
        ),
        migrations.AddField(
            model_name="queuepause",
            name="reason",
            field=models.TextField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="queuepause",
            name="until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunSQL(FORWARD, REVERSE),
    ]
