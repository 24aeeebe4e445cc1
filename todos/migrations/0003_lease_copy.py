"""The held lease's fence digest and attempt-write time, copied onto the todo row.

A heartbeat must check the fence and decide whether the open attempt's ``last_heartbeat_at`` is
due for its once-a-minute write (docs/decisions/0006-heartbeat-sampling.md). Both lived only on the attempt, so
every heartbeat probed ``todo_attempts`` (2-3 buffers) on top of the todo's HOT update, against
the 10 % heartbeat budget (docs/performance.md). With the copies on the todo row, a heartbeat reads
and writes one row, and reads the attempt only in its once-a-minute write.

- ``lease_token_hash``: the SHA-256 of the holder's lease token, as on its open attempt (NULL
  when the claim was not fenced). The attempt keeps its own, the history's record; statements
  compare the todo's copy (``todos/sql/_fence.sql``).
- ``attempt_heartbeat_at``: when the open attempt's ``last_heartbeat_at`` was last written, NULL
  until the first heartbeat of a claim.

Both are written by the claim and cleared wherever the holder is (``_unheld.sql``); a CHECK keeps
them NULL on a todo nobody holds.

Not in one transaction (``atomic = False``), so no step holds ``todos`` locked for long: ADD
COLUMN without a default is a catalog change; the CHECKs are added NOT VALID (no scan under the
ACCESS EXCLUSIVE lock) and validated last, which scans the table under a lock that lets reads and
writes go on; the backfill touches only the todos in flight. A run that fails part way leaves the
steps before it applied; reversing drops whatever is there.

Stop every process running the previous code before applying it, and do not roll the code back
without reversing it. Older code neither writes nor clears the copies: its reports, sweeps and
revocations would fail the CHECK on a backfilled todo, and a takeover it made would leave the
previous holder's digest on the row, which lets that previous holder act on the new attempt
(docs/guides/operations.md, "Upgrading").
"""

from django.db import migrations, models

ADD_COLUMNS = """
ALTER TABLE todos ADD COLUMN lease_token_hash bytea, ADD COLUMN attempt_heartbeat_at timestamptz
"""
ADD_CHECKS = """
ALTER TABLE todos
    ADD CONSTRAINT todos_lease_token_hash_check
        CHECK (octet_length(lease_token_hash) = 32) NOT VALID,
    ADD CONSTRAINT todos_lease_copy_held
        CHECK (owner IS NOT NULL OR (lease_token_hash IS NULL AND attempt_heartbeat_at IS NULL))
        NOT VALID
"""
BACKFILL = """
UPDATE todos t
   SET lease_token_hash = a.lease_token_hash, attempt_heartbeat_at = a.last_heartbeat_at
  FROM todo_attempts a
 WHERE a.todo_id = t.id AND a.seq = t.attempts_total AND a.ended_at IS NULL
   AND t.owner IS NOT NULL
   AND (a.lease_token_hash IS NOT NULL OR a.last_heartbeat_at IS NOT NULL)
"""
VALIDATE = [
    "ALTER TABLE todos VALIDATE CONSTRAINT todos_lease_token_hash_check",
    "ALTER TABLE todos VALIDATE CONSTRAINT todos_lease_copy_held",
]
DROP_CHECKS = """
ALTER TABLE todos
    DROP CONSTRAINT IF EXISTS todos_lease_copy_held,
    DROP CONSTRAINT IF EXISTS todos_lease_token_hash_check
"""
DROP_COLUMNS = """
ALTER TABLE todos DROP COLUMN IF EXISTS attempt_heartbeat_at,
    DROP COLUMN IF EXISTS lease_token_hash
"""


class Migration(migrations.Migration):
    atomic = False
    dependencies = [
        ("todos", "0002_attempt_counters"),
        ("attempts", "0001_todo_attempts"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(ADD_COLUMNS, DROP_COLUMNS),
                migrations.RunSQL(ADD_CHECKS, DROP_CHECKS),
                migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
                migrations.RunSQL(VALIDATE, migrations.RunSQL.noop),
            ],
            state_operations=[
                migrations.AddField(
                    model_name="todo",
                    name="lease_token_hash",
                    field=models.BinaryField(blank=True, editable=False, null=True),
                ),
                migrations.AddField(
                    model_name="todo",
                    name="attempt_heartbeat_at",
                    field=models.DateTimeField(blank=True, editable=False, null=True),
                ),
            ],
        )
    ]
