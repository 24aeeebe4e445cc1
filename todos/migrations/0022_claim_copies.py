"""Two copies of the current claim on the todo's row, beside the live lease the row already
carries (docs/decisions/0005-lease-copy.md): ``lease_ttl_seconds`` and ``claimant``.

``lease_ttl_seconds``: the lease TTL the current claim chose (its own ``lease_ttl_seconds``, or
the runtime default when it named none).

A heartbeat or an operator's extend that names no TTL extends the lease by this one instead of
the runtime default (``todos/sql/_lease_extended.sql``), so an agent that claims for 15 s and
crashes after a heartbeat holds its todo for 15 s more, not five minutes. Every claim writes it
(``_claim_tail.sql``); it sits on the todo's row, beside the live lease it sizes, because a
heartbeat reads only that row (docs/decisions/0005-lease-copy.md). Nullable with no default,
so adding it rewrites no row; a todo claimed before it existed falls back to the default. The
CHECK is the bounds the lifecycle refuses first (``todos/limits.py`` ``LEASE_TTL_*``).

``claimant``: the label the current claim's agent sent (``attempts/rules.py`` ``claimant``:
control characters stripped, at most 128 bytes), or NULL. The list, the drawer and the fleet
show a held todo's holder by it, without reading the attempt.
"""

from django.db import migrations, models

COLUMN = """
ALTER TABLE todos
    ADD COLUMN lease_ttl_seconds int
        CONSTRAINT todos_lease_ttl_range CHECK (lease_ttl_seconds BETWEEN 10 AND 86400),
    ADD COLUMN claimant text;
"""
DROP_COLUMN = "ALTER TABLE todos DROP COLUMN lease_ttl_seconds, DROP COLUMN claimant;"


class Migration(migrations.Migration):
    dependencies = [("todos", "0021_source_team")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(COLUMN, DROP_COLUMN)],
            state_operations=[
                migrations.AddField(
                    model_name="todo",
                    name="lease_ttl_seconds",
                    field=models.IntegerField(blank=True, null=True, editable=False),
                ),
                migrations.AddField(
                    model_name="todo",
                    name="claimant",
                    field=models.TextField(blank=True, null=True, editable=False),
                ),
            ],
        ),
    ]
