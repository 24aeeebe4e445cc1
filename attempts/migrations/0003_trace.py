"""todo_attempts.trace_id and spans_dropped, and the index the OTLP receiver binds spans through.

- ``trace_id``: the attempt's trace (16 bytes), from the claim's traceparent or minted for it;
  spans of that trace bind to this attempt (``otlp/sql/bind.sql``). The length CHECK is added
  NOT VALID and validated in its own step: validating scans the table, and VALIDATE CONSTRAINT
  does so without blocking claims and endings the way a CHECK added with the column would.
- ``spans_dropped``: spans refused once the attempt held its span cap (``otlp/store.py``).
  ADD COLUMN … DEFAULT 0 is metadata only.
- ``idx_todo_attempts_trace``: serves the receiver's first binding rule, ``a.trace_id =
  ANY($trace_ids)`` joined to the todo's endpoint. Partial: attempts without a trace (operator
  claims, rows from before this migration) are never looked up by it.

Not in one transaction (``atomic = False``), so the index is built CONCURRENTLY (a plain build
would hold off every claim and ending for as long as it takes). Each step can run again after a
failure: a CONCURRENTLY build that fails leaves an invalid index behind, which the step before
it drops.
"""

from django.db import migrations, models

ADD_COLUMNS = """
ALTER TABLE todo_attempts ADD COLUMN IF NOT EXISTS trace_id bytea;
ALTER TABLE todo_attempts ADD COLUMN IF NOT EXISTS spans_dropped int NOT NULL DEFAULT 0;
"""
DROP_COLUMNS = """
ALTER TABLE todo_attempts DROP COLUMN IF EXISTS spans_dropped;
ALTER TABLE todo_attempts DROP COLUMN IF EXISTS trace_id;
"""
ADD_CHECK = """
ALTER TABLE todo_attempts DROP CONSTRAINT IF EXISTS todo_attempts_trace_id_length;
ALTER TABLE todo_attempts ADD CONSTRAINT todo_attempts_trace_id_length
    CHECK (octet_length(trace_id) = 16) NOT VALID;
"""
VALIDATE_CHECK = "ALTER TABLE todo_attempts VALIDATE CONSTRAINT todo_attempts_trace_id_length"
DROP_CHECK = "ALTER TABLE todo_attempts DROP CONSTRAINT IF EXISTS todo_attempts_trace_id_length"
DROP_INDEX = "DROP INDEX CONCURRENTLY IF EXISTS idx_todo_attempts_trace"
CREATE_INDEX = """
CREATE INDEX CONCURRENTLY idx_todo_attempts_trace ON todo_attempts (trace_id)
    WHERE trace_id IS NOT NULL
"""


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("attempts", "0002_activity")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(ADD_COLUMNS, DROP_COLUMNS),
                migrations.RunSQL(ADD_CHECK, DROP_CHECK),
                migrations.RunSQL(VALIDATE_CHECK, migrations.RunSQL.noop),
                migrations.RunSQL(DROP_INDEX, migrations.RunSQL.noop),
                migrations.RunSQL(CREATE_INDEX, DROP_INDEX),
            ],
            state_operations=[
                migrations.AddField(
                    model_name="todoattempt",
                    name="trace_id",
                    field=models.BinaryField(blank=True, editable=False, null=True),
                ),
                migrations.AddField(
                    model_name="todoattempt",
                    name="spans_dropped",
                    field=models.IntegerField(db_default=0, default=0),
                ),
                migrations.AddIndex(
                    model_name="todoattempt",
                    index=models.Index(
                        fields=["trace_id"],
                        condition=models.Q(trace_id__isnull=False),
                        name="idx_todo_attempts_trace",
                    ),
                ),
            ],
        )
    ]
