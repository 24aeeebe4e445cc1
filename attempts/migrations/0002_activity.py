"""todo_attempts.notes_dropped and the index the Activity feed reads ended attempts through.

- ``notes_dropped``: the progress notes refused once the attempt held its cap of notes, counted
  so the trail can say how many are missing. ADD COLUMN … DEFAULT 0 is metadata only.
- ``idx_todo_attempts_ended``: serves the Activity feed's "attempt ended" arm, the owner's
  ended attempts newest first (``ended_at < cursor ORDER BY ended_at DESC``), and its unread
  count (``ended_at > activity_seen_at``). Partial: open attempts never appear in the feed.

Not in one transaction (``atomic = False``), so the index is built CONCURRENTLY: a plain CREATE
INDEX would hold off every claim and every ending (they all write ``todo_attempts``) for as long
as the build takes on a large table. Each step can run again after a failure: a CONCURRENTLY
build that fails leaves an invalid index behind, which the step before it drops.
"""

from django.db import migrations, models

ADD_COLUMN = (
    "ALTER TABLE todo_attempts ADD COLUMN IF NOT EXISTS notes_dropped int NOT NULL DEFAULT 0"
)
DROP_COLUMN = "ALTER TABLE todo_attempts DROP COLUMN IF EXISTS notes_dropped"
DROP_INDEX = "DROP INDEX CONCURRENTLY IF EXISTS idx_todo_attempts_ended"
CREATE_INDEX = """
CREATE INDEX CONCURRENTLY idx_todo_attempts_ended ON todo_attempts (ended_at DESC)
    WHERE ended_at IS NOT NULL
"""


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("attempts", "0001_todo_attempts")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(ADD_COLUMN, DROP_COLUMN),
                migrations.RunSQL(DROP_INDEX, migrations.RunSQL.noop),
                migrations.RunSQL(CREATE_INDEX, DROP_INDEX),
            ],
            state_operations=[
                migrations.AddField(
                    model_name="todoattempt",
                    name="notes_dropped",
                    field=models.IntegerField(db_default=0, default=0),
                ),
                migrations.AddIndex(
                    model_name="todoattempt",
                    index=models.Index(
                        fields=["-ended_at"],
                        condition=models.Q(ended_at__isnull=False),
                        name="idx_todo_attempts_ended",
                    ),
                ),
            ],
        )
    ]
