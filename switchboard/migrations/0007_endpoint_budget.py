"""An endpoint's daily budget (UTC day) over all its queues (todos/budgets.py)."""

from decimal import Decimal

import django.core.validators
from django.db import migrations, models

FORWARD = "ALTER TABLE endpoints ADD CONSTRAINT endpoints_daily_budget_usd_check CHECK (daily_budget_usd >= 0);"
REVERSE = "ALTER TABLE endpoints DROP CONSTRAINT endpoints_daily_budget_usd_check;"


class Migration(migrations.Migration):
    dependencies = [
        ("switchboard", "0006_teams"),
    ]

    operations = [
        migrations.AddField(
            model_name="endpoint",
            name="daily_budget_usd",
            field=models.DecimalField(
                blank=True,
                decimal_places=6,
                max_digits=14,
                null=True,
                validators=[django.core.validators.MinValueValidator(Decimal("0"))],
            ),
        ),
        migrations.RunSQL(FORWARD, REVERSE),
    ]
