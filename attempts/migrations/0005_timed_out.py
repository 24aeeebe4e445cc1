"""The attempt outcome ``timed_out``: the attempt's deadline (its todo's finish_by, or its run
timeout) passed while it was open, and the sweeper closed it (todos/sql/deadlines.sql,
todos/sql/reap.sql)."""

from django.db import migrations, models

OUTCOMES = "'completed','failed','released','lease_expired','reaped','canceled','revoked'"
FORWARD = f"""
ALTER TABLE todo_attempts DROP CONSTRAINT todo_attempts_outcome_check,
    ADD CONSTRAINT todo_attempts_outcome_check CHECK (outcome IN ({OUTCOMES},'timed_out'));
"""
REVERSE = f"""
ALTER TABLE todo_attempts DROP CONSTRAINT todo_attempts_outcome_check,
    ADD CONSTRAINT todo_attempts_outcome_check CHECK (outcome IN ({OUTCOMES}));
"""


class Migration(migrations.Migration):
    dependencies = [("attempts", "0004_endpoint_ended")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, REVERSE)],
            state_operations=[
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
                        ],
                        null=True,
                    ),
                ),
            ],
        ),
    ]
