"""todo_activity.endpoint_id: a copy of the row's todo's endpoint, and the index the Activity
feed walks a human's endpoints through (docs/decisions/0039-feed-by-endpoint.md).

- ``endpoint_id``: the todo's ``endpoint_id``, written by every statement that inserts a row
  (from the todo row it already holds). A todo's endpoint never changes (moving an endpoint to
  a team changes the endpoint's owner, not the todo's endpoint), so the copy never goes stale;
  no foreign key of its own: the todo's (``todos_endpoint_id_fkey``, no cascade) already keeps
  the endpoint while the row's todo exists.
- ``idx_todo_activity_feed`` (endpoint_id, at DESC) WHERE kind <> 'rung': serves the feed's
  activity arm, one endpoint of the human's at a time newest first from a keyset cursor
  (``endpoint_id = $1 AND at <= $cursor ORDER BY at DESC``), and its unread count (``at >
  humans.activity_seen_at``), so neither reads another owner's rows. Rings are left out, as
  the feed leaves them out. It replaces ``idx_todo_activity_at`` (at DESC), which served the
  feed's walk of every owner's rows (and the admin's activity list across todos, which now sorts
  its rows): each activity insert still maintains as many indexes, and no generic plan of the
  feed can walk every owner's rows by time (docs/decisions/0039-feed-by-endpoint.md).

Not in one transaction (``atomic = False``), so no step holds ``todo_activity`` locked for long:
ADD COLUMN without a default is a catalog change; the backfill runs in batches in primary-key
order, each committing on its own; NOT NULL is proved by a CHECK added NOT VALID and validated
(a scan under a lock that lets reads and writes go on), after which SET NOT NULL needs no scan
of its own and the CHECK goes; the index is built CONCURRENTLY before the old one is dropped
CONCURRENTLY. Every step can run again after a failure (a batch fills only rows still NULL; a
CONCURRENTLY build that fails leaves an invalid index behind, which the step before it drops).

Stop every process running the previous code before applying it: its activity rows would have
no ``endpoint_id`` and fail the NOT NULL (docs/guides/operations.md, "Upgrading").
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

BATCH = 5000

ADD_COLUMN = "ALTER TABLE todo_activity ADD COLUMN IF NOT EXISTS endpoint_id uuid"
DROP_COLUMN = "ALTER TABLE todo_activity DROP COLUMN IF EXISTS endpoint_id"

# One batch: the next BATCH rows in primary-key order after the cursor (todo_activity_pkey, so
# the pass reads the table once), those still without a copy given their todo's endpoint; it
# returns the batch's last key, the next cursor (no row: the pass is done).
_BATCH = """
WITH b AS (
    SELECT todo_id, seq FROM todo_activity
     WHERE (todo_id, seq) > (%(after_todo)s, %(after_seq)s)
     ORDER BY todo_id, seq
     LIMIT %(batch)s
), filled AS (
    UPDATE todo_activity v
       SET endpoint_id = t.endpoint_id
      FROM b, todos t
     WHERE v.todo_id = b.todo_id AND v.seq = b.seq AND t.id = v.todo_id
       AND v.endpoint_id IS NULL
)
SELECT todo_id, seq FROM b ORDER BY todo_id DESC, seq DESC LIMIT 1
"""

NOT_NULL = [
    "ALTER TABLE todo_activity DROP CONSTRAINT IF EXISTS todo_activity_endpoint_id_filled",
    "ALTER TABLE todo_activity ADD CONSTRAINT todo_activity_endpoint_id_filled"
    " CHECK (endpoint_id IS NOT NULL) NOT VALID",
    "ALTER TABLE todo_activity VALIDATE CONSTRAINT todo_activity_endpoint_id_filled",
    # The validated CHECK proves it: PostgreSQL skips the scan.
    "ALTER TABLE todo_activity ALTER COLUMN endpoint_id SET NOT NULL",
    "ALTER TABLE todo_activity DROP CONSTRAINT todo_activity_endpoint_id_filled",
]
NULLABLE = "ALTER TABLE todo_activity ALTER COLUMN endpoint_id DROP NOT NULL"

DROP_INDEX = "DROP INDEX CONCURRENTLY IF EXISTS idx_todo_activity_feed"
CREATE_INDEX = """
CREATE INDEX CONCURRENTLY idx_todo_activity_feed
    ON todo_activity (endpoint_id, at DESC) WHERE kind <> 'rung'
"""
DROP_OLD_INDEX = "DROP INDEX CONCURRENTLY IF EXISTS idx_todo_activity_at"
CREATE_OLD_INDEX = "CREATE INDEX CONCURRENTLY idx_todo_activity_at ON todo_activity (at DESC)"


def backfill(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cur:
        after: tuple[str, int] | None = ("", -1)
        while after is not None:
            cur.execute(_BATCH, {"after_todo": after[0], "after_seq": after[1], "batch": BATCH})
            after = cur.fetchone()


class Migration(migrations.Migration):
    # Each batch commits on its own, and the indexes are built CONCURRENTLY.
    atomic = False

    dependencies = [("activity", "0004_budget"), ("switchboard", "0001_initial")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(ADD_COLUMN, DROP_COLUMN),
                migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False),
                migrations.RunSQL(NOT_NULL, NULLABLE),
                migrations.RunSQL(DROP_INDEX, migrations.RunSQL.noop),
                migrations.RunSQL(CREATE_INDEX, DROP_INDEX),
                migrations.RunSQL(DROP_OLD_INDEX, CREATE_OLD_INDEX),
            ],
            state_operations=[
                migrations.AddField(
                    model_name="todoactivity",
                    name="endpoint",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        editable=False,
                        on_delete=models.DO_NOTHING,
                        related_name="+",
                        to="switchboard.endpoint",
                    ),
                ),
                migrations.RemoveIndex(model_name="todoactivity", name="idx_todo_activity_at"),
                migrations.AddIndex(
                    model_name="todoactivity",
                    index=models.Index(
                        fields=["endpoint", "-at"],
                        condition=~models.Q(kind="rung"),
                        name="idx_todo_activity_feed",
                    ),
                ),
            ],
        )
    ]
