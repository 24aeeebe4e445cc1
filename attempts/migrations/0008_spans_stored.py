"""todo_attempts.spans_stored: how many spans the OTLP ingest stored for the attempt, ever.

Kept by ``otlp/sql/store.sql`` with the batch's other per-attempt counts; never lowered when
spans go (span retention drops whole days of them, forgetting erases a todo's), so the trail
page can say how many of an attempt's spans are gone (``otlp/markup.py``,
docs/decisions/0040-span-partitions.md). ADD COLUMN … DEFAULT 0 is metadata only; the backfill
counts the spans already stored, one UPDATE of the attempts that have any.
"""

from django.db import migrations, models

BACKFILL = """
UPDATE todo_attempts a
   SET spans_stored = c.n
  FROM (SELECT todo_id, attempt_seq, count(*) AS n
          FROM todo_spans
         WHERE attempt_seq IS NOT NULL
         GROUP BY todo_id, attempt_seq) c
 WHERE a.todo_id = c.todo_id AND a.seq = c.attempt_seq
"""


class Migration(migrations.Migration):
    dependencies = [("attempts", "0007_endpoint"), ("otlp", "0005_default_prices")]

    operations = [
        migrations.AddField(
            model_name="todoattempt",
            name="spans_stored",
            field=models.IntegerField(db_default=0, default=0),
        ),
        # Reversed by the column's removal above.
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
