"""The index the Board's fleet view reads an endpoint's recently ended attempts through.

- ``idx_todo_attempts_by_endpoint``: serves ``todos/sql/fleet.sql``'s failure rates, the
  attempts one endpoint's agents ended in the last day (``claimer_endpoint_id = $1 AND ended_at
  > now() - interval '1 day'``). Without it that read walks every endpoint's day of attempts
  through ``idx_todo_attempts_ended``. It carries ``outcome`` (INCLUDE), so a busy endpoint's
  day of attempts is counted from the index alone, without visiting the table, once vacuum
  has marked the pages all-visible. Partial: open attempts never count.

Not in one transaction (``atomic = False``), so the index is built CONCURRENTLY: a plain build
would hold off every claim and ending for as long as it takes. Each step can run again after a
failure: a CONCURRENTLY build that fails leaves an invalid index behind, which the step before
it drops.
"""

from django.db import migrations, models

DROP_INDEX = "DROP INDEX CONCURRENTLY IF EXISTS idx_todo_attempts_by_endpoint"
CREATE_INDEX = """
CREATE INDEX CONCURRENTLY idx_todo_attempts_by_endpoint
    ON todo_attempts (claimer_endpoint_id, ended_at) INCLUDE (outcome)
    WHERE ended_at IS NOT NULL
"""


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("attempts", "0003_trace")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(DROP_INDEX, migrations.RunSQL.noop),
                migrations.RunSQL(CREATE_INDEX, DROP_INDEX),
            ],
            state_operations=[
                migrations.AddIndex(
                    model_name="todoattempt",
                    index=models.Index(
                        fields=["claimer_endpoint", "ended_at"],
                        condition=models.Q(ended_at__isnull=False),
                        include=["outcome"],
                        name="idx_todo_attempts_by_endpoint",
                    ),
                ),
            ],
        )
    ]
