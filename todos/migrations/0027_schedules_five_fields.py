"""An enabled schedule's cron has five fields.

``todos/schedules.check_cron`` refuses a sixth field (cronsim reads it as seconds, first), but
schedules written before it kept theirs and fired on every sweeper pass. Each enabled one is
paused, with a run saying why, so its page shows the reason and its operator edits the cron to
five fields before resuming it (resume refuses it until then); then the CHECK keeps it so.

Reversed, the CHECK goes; the paused schedules stay paused (nothing records which were
running, and resuming them would fire every pass again).
"""

from django.db import migrations, models

FIVE_FIELDS = r"^\S+( \S+){4}$"

PAUSE = rf"""
WITH paused AS (
    UPDATE schedules SET enabled = false, next_run_at = NULL
     WHERE enabled AND cron !~ '{FIVE_FIELDS}'
    RETURNING id
)
INSERT INTO schedule_runs (schedule_id, tick, fired_at, ticks, error)
SELECT id, now(), now(), 1,
       'paused: a cron with seconds (six fields) fired on every sweeper pass; '
       || 'edit it to five fields (minute hour day-of-month month day-of-week) to resume'
  FROM paused
"""


class Migration(migrations.Migration):
    dependencies = [("todos", "0026_check_domains")]

    operations = [
        migrations.RunSQL(PAUSE, reverse_sql=migrations.RunSQL.noop),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("enabled", False), ("cron__regex", FIVE_FIELDS), _connector="OR"
                ),
                name="schedules_enabled_five_fields",
            ),
        ),
    ]
