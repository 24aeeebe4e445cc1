"""Time on every todo: priority, not_before, start_by, finish_by, run_timeout_seconds and
dedupe_key (docs/decisions/0027-time-and-cancellation.md); and on every routing rule, the same
relative to a delivery's arrival (a delay, start and finish windows, a priority, a run timeout,
and the payload path a dedupe key is read from).

- The columns are nullable or carry a constant default, so adding them rewrites no row. Their
  CHECKs are the bounds the lifecycle refuses first (``todos/lifecycle/agent.py``): a priority
  in -1000..1000, a run timeout of at least 10 seconds, and deadlines in order
  (not_before <= start_by <= finish_by, not_before <= finish_by).
- ``todos_claim_queue_idx`` becomes (endpoint_id, queue, priority DESC, created_at, id): a
  queue hands out higher priority first, then older, read in index order with no sort. Built
  under a temporary name and renamed, so the statements and the plan tests keep naming it.
- ``todos_dedupe_idx``: at most one unfinished todo per endpoint and dedupe key; create.sql's
  ``ON CONFLICT`` arbitrates on it, so two racing creates give one todo.
- ``todos_finish_by_idx``, ``todos_start_by_idx``, ``todos_not_before_idx``: the sweeps'
  reads of the todos whose deadline passed and of the deferred todos that became due
  (deadlines.sql, ring_due.sql's ``not_before`` scan); each partial over the few rows that can
  match.

Not in one transaction (``atomic = False``): the indexes are built CONCURRENTLY, one statement
each, so claims and intake go on while they build. A step that fails part way leaves an
INVALID index; every step can run again (``IF NOT EXISTS`` / ``IF EXISTS``).
"""

from django.db import migrations, models

CLAIMABLE = (
    "WHERE state IN ('pending','claimed') OR (state = 'failed' AND next_retry_at IS NOT NULL)"
)

COLUMNS = """
ALTER TABLE todos
    ADD COLUMN priority int NOT NULL DEFAULT 0
        CONSTRAINT todos_priority_range CHECK (priority BETWEEN -1000 AND 1000),
    ADD COLUMN not_before timestamptz,
    ADD COLUMN start_by timestamptz,
    ADD COLUMN finish_by timestamptz,
    ADD COLUMN run_timeout_seconds int
        CONSTRAINT todos_run_timeout_min CHECK (run_timeout_seconds >= 10),
    ADD COLUMN dedupe_key text
        CONSTRAINT todos_dedupe_key_size CHECK (octet_length(dedupe_key) BETWEEN 1 AND 256),
    ADD CONSTRAINT todos_deadlines_in_order CHECK (
        (not_before IS NULL OR start_by IS NULL OR not_before <= start_by)
        AND (not_before IS NULL OR finish_by IS NULL OR not_before <= finish_by)
        AND (start_by IS NULL OR finish_by IS NULL OR start_by <= finish_by));
"""
RULE_COLUMNS = """
ALTER TABLE rules
    ADD COLUMN priority int NOT NULL DEFAULT 0
        CONSTRAINT rules_priority_range CHECK (priority BETWEEN -1000 AND 1000),
    ADD COLUMN delay_seconds int CONSTRAINT rules_delay_positive CHECK (delay_seconds >= 1),
    ADD COLUMN start_within_seconds int
        CONSTRAINT rules_start_within_positive CHECK (start_within_seconds >= 1),
    ADD COLUMN finish_within_seconds int
        CONSTRAINT rules_finish_within_positive CHECK (finish_within_seconds >= 1),
    ADD COLUMN run_timeout_seconds int
        CONSTRAINT rules_run_timeout_min CHECK (run_timeout_seconds >= 10),
    ADD COLUMN dedupe_key_path text
        CONSTRAINT rules_dedupe_key_path_size CHECK (octet_length(dedupe_key_path) BETWEEN 1 AND 256);
"""
DROP_RULE_COLUMNS = """
ALTER TABLE rules
    DROP COLUMN dedupe_key_path, DROP COLUMN run_timeout_seconds,
    DROP COLUMN finish_within_seconds, DROP COLUMN start_within_seconds,
    DROP COLUMN delay_seconds, DROP COLUMN priority;
"""
DROP_COLUMNS = """
ALTER TABLE todos
    DROP CONSTRAINT todos_deadlines_in_order,
    DROP COLUMN dedupe_key, DROP COLUMN run_timeout_seconds, DROP COLUMN finish_by,
    DROP COLUMN start_by, DROP COLUMN not_before, DROP COLUMN priority;
"""


def index(name: str, definition: str, *, unique: bool = False) -> migrations.RunSQL:
    kind = "UNIQUE INDEX" if unique else "INDEX"
    return migrations.RunSQL(
        f"CREATE {kind} CONCURRENTLY IF NOT EXISTS {name} ON todos {definition}",
        f"DROP INDEX CONCURRENTLY IF EXISTS {name}",
    )


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("todos", "0014_todo_search_table")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(COLUMNS, DROP_COLUMNS),
                migrations.RunSQL(RULE_COLUMNS, DROP_RULE_COLUMNS),
            ],
            state_operations=[
                migrations.AddField(
                    model_name="rule",
                    name="priority",
                    field=models.IntegerField(db_default=0, default=0),
                ),
                *(
                    migrations.AddField(
                        model_name="rule",
                        name=name,
                        field=models.IntegerField(blank=True, null=True),
                    )
                    for name in (
                        "delay_seconds",
                        "start_within_seconds",
                        "finish_within_seconds",
                        "run_timeout_seconds",
                    )
                ),
                migrations.AddField(
                    model_name="rule",
                    name="dedupe_key_path",
                    field=models.TextField(blank=True, null=True),
                ),
                migrations.AddField(
                    model_name="todo",
                    name="priority",
                    field=models.IntegerField(db_default=0, default=0),
                ),
                migrations.AddField(
                    model_name="todo",
                    name="not_before",
                    field=models.DateTimeField(blank=True, null=True),
                ),
                migrations.AddField(
                    model_name="todo",
                    name="start_by",
                    field=models.DateTimeField(blank=True, null=True),
                ),
                migrations.AddField(
                    model_name="todo",
                    name="finish_by",
                    field=models.DateTimeField(blank=True, null=True),
                ),
                migrations.AddField(
                    model_name="todo",
                    name="run_timeout_seconds",
                    field=models.IntegerField(blank=True, null=True),
                ),
                migrations.AddField(
                    model_name="todo",
                    name="dedupe_key",
                    field=models.TextField(blank=True, null=True),
                ),
            ],
        ),
        # The claim index in claim order: priority first (docs/decisions/0027).
        index(
            "todos_claim_order_idx",
            f"(endpoint_id, queue, priority DESC, created_at, id) {CLAIMABLE}",
        ),
        migrations.RunSQL(
            "DROP INDEX CONCURRENTLY IF EXISTS todos_claim_queue_idx",
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS todos_claim_queue_idx"
            f" ON todos (endpoint_id, queue, created_at, id) {CLAIMABLE}",
        ),
        migrations.RunSQL(
            "ALTER INDEX todos_claim_order_idx RENAME TO todos_claim_queue_idx",
            "ALTER INDEX todos_claim_queue_idx RENAME TO todos_claim_order_idx",
        ),
        index(
            "todos_dedupe_idx",
            "(endpoint_id, dedupe_key) WHERE dedupe_key IS NOT NULL AND finished_at IS NULL",
            unique=True,
        ),
        index(
            "todos_finish_by_idx", "(finish_by) WHERE finish_by IS NOT NULL AND finished_at IS NULL"
        ),
        index("todos_start_by_idx", "(start_by) WHERE start_by IS NOT NULL AND state = 'pending'"),
        index(
            "todos_not_before_idx",
            "(not_before) WHERE not_before IS NOT NULL AND state = 'pending'",
        ),
    ]
