"""todo_attempts.endpoint_id: a copy of the attempt's todo's endpoint, and the index the Activity
feed walks a human's endpoints' attempt endings through (docs/decisions/0039-feed-by-endpoint.md).

- ``endpoint_id``: the todo's ``endpoint_id``, written by the claim that opens the attempt
  (``todos/sql/_claim_tail.sql``, from the todo row it updates). ``claimer_endpoint_id`` is not
  it: an owner's claim from the Board has none. A todo's endpoint never changes (moving an
  endpoint to a team changes the endpoint's owner, not the todo's endpoint), so the copy never
  goes stale; no foreign key of its own: the todo's keeps the endpoint.
- ``idx_todo_attempts_feed`` (endpoint_id, ended_at DESC) WHERE ended_at IS NOT NULL:
  serves the feed's arm of attempt endings, one endpoint of the human's at a time newest first
  from a keyset cursor (``endpoint_id = $1 AND ended_at <= $cursor ORDER BY ended_at DESC``), and
  its unread count, so neither reads another owner's endings.
- ``idx_todo_attempts_ended`` (ended_at DESC), rebuilt for the one query left that reads it, the
  Overview's rollup of every endpoint's endings by time (``todos/sql/overview_minutes.sql``): its
  predicate becomes that query's, ``ended_at IS NOT NULL AND outcome IN ('completed', 'failed',
  'lease_expired', 'reaped')``. The feed names no such outcome list, so PostgreSQL cannot walk
  it for the feed: with every owner's endings in time order and (in a table filled in time
  order) well correlated with the heap, it could look cheaper to a generic plan than the
  human's own index, and would then walk every other owner's endings again. It is also smaller
  (releases, cancels and requeues are not in it).

Not in one transaction (``atomic = False``), as activity/migrations/0005_endpoint.py and for the
same reasons: ADD COLUMN without a default, a batched backfill in primary-key order (each batch
commits on its own), NOT NULL proved by a validated CHECK, the indexes built CONCURRENTLY (the
Overview's new one before its old one is dropped). Every step can run again after a failure.

Stop every process running the previous code before applying it: its claims would open
attempts with no ``endpoint_id`` and fail the NOT NULL (docs/guides/operations.md, "Upgrading").
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

BATCH = 5000

ADD_COLUMN = "ALTER TABLE todo_attempts ADD COLUMN IF NOT EXISTS endpoint_id uuid"
DROP_COLUMN = "ALTER TABLE todo_attempts DROP COLUMN IF EXISTS endpoint_id"

# One batch: the next BATCH attempts in primary-key order after the cursor (todo_attempts_pkey),
# those still without a copy given their todo's endpoint; it returns the batch's last key, the
# next cursor (no row: the pass is done).
_BATCH = """
WITH b AS (
    SELECT todo_id, seq FROM todo_attempts
     WHERE (todo_id, seq) > (%(after_todo)s, %(after_seq)s)
     ORDER BY todo_id, seq
     LIMIT %(batch)s
), filled AS (
    UPDATE todo_attempts a
       SET endpoint_id = t.endpoint_id
      FROM b, todos t
     WHERE a.todo_id = b.todo_id AND a.seq = b.seq AND t.id = a.todo_id
       AND a.endpoint_id IS NULL
)
SELECT todo_id, seq FROM b ORDER BY todo_id DESC, seq DESC LIMIT 1
"""

NOT_NULL = [
    "ALTER TABLE todo_attempts DROP CONSTRAINT IF EXISTS todo_attempts_endpoint_id_filled",
    "ALTER TABLE todo_attempts ADD CONSTRAINT todo_attempts_endpoint_id_filled"
    " CHECK (endpoint_id IS NOT NULL) NOT VALID",
    "ALTER TABLE todo_attempts VALIDATE CONSTRAINT todo_attempts_endpoint_id_filled",
    # The validated CHECK proves it: PostgreSQL skips the scan.
    "ALTER TABLE todo_attempts ALTER COLUMN endpoint_id SET NOT NULL",
    "ALTER TABLE todo_attempts DROP CONSTRAINT todo_attempts_endpoint_id_filled",
]
NULLABLE = "ALTER TABLE todo_attempts ALTER COLUMN endpoint_id DROP NOT NULL"

DROP_INDEX = "DROP INDEX CONCURRENTLY IF EXISTS idx_todo_attempts_feed"
# The Overview's index, rebuilt under a new name and renamed over the old one.
OVERVIEW_OUTCOMES = ("completed", "failed", "lease_expired", "reaped")
_ENDED = """
CREATE INDEX CONCURRENTLY idx_todo_attempts_ended_new ON todo_attempts (ended_at DESC)
    WHERE {predicate}
"""
DROP_NEW_ENDED = "DROP INDEX CONCURRENTLY IF EXISTS idx_todo_attempts_ended_new"
REBUILD_ENDED = [
    DROP_NEW_ENDED,
    _ENDED.format(
        predicate="ended_at IS NOT NULL AND outcome IN ("
        + ", ".join(f"'{o}'" for o in OVERVIEW_OUTCOMES)
        + ")"
    ),
    "DROP INDEX CONCURRENTLY IF EXISTS idx_todo_attempts_ended",
    "ALTER INDEX idx_todo_attempts_ended_new RENAME TO idx_todo_attempts_ended",
]
RESTORE_ENDED = [
    DROP_NEW_ENDED,
    _ENDED.format(predicate="ended_at IS NOT NULL"),
    "DROP INDEX CONCURRENTLY IF EXISTS idx_todo_attempts_ended",
    "ALTER INDEX idx_todo_attempts_ended_new RENAME TO idx_todo_attempts_ended",
]
CREATE_INDEX = """
CREATE INDEX CONCURRENTLY idx_todo_attempts_feed
    ON todo_attempts (endpoint_id, ended_at DESC) WHERE ended_at IS NOT NULL
"""


def backfill(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cur:
        after: tuple[str, int] | None = ("", -1)
        while after is not None:
            cur.execute(_BATCH, {"after_todo": after[0], "after_seq": after[1], "batch": BATCH})
            after = cur.fetchone()


class Migration(migrations.Migration):
    # Each batch commits on its own, and the index is built CONCURRENTLY.
    atomic = False

    dependencies = [("attempts", "0006_usage"), ("switchboard", "0001_initial")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(ADD_COLUMN, DROP_COLUMN),
                migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False),
                migrations.RunSQL(NOT_NULL, NULLABLE),
                migrations.RunSQL(DROP_INDEX, migrations.RunSQL.noop),
                migrations.RunSQL(CREATE_INDEX, DROP_INDEX),
                migrations.RunSQL(REBUILD_ENDED, RESTORE_ENDED),
            ],
            state_operations=[
                migrations.AddField(
                    model_name="todoattempt",
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
                migrations.AddIndex(
                    model_name="todoattempt",
                    index=models.Index(
                        fields=["endpoint", "-ended_at"],
                        condition=models.Q(ended_at__isnull=False),
                        name="idx_todo_attempts_feed",
                    ),
                ),
                migrations.RemoveIndex(model_name="todoattempt", name="idx_todo_attempts_ended"),
                migrations.AddIndex(
                    model_name="todoattempt",
                    index=models.Index(
                        fields=["-ended_at"],
                        condition=models.Q(
                            ended_at__isnull=False, outcome__in=list(OVERVIEW_OUTCOMES)
                        ),
                        name="idx_todo_attempts_ended",
                    ),
                ),
            ],
        )
    ]
