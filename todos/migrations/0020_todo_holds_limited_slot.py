"""todos.holds_limited_slot: the claim that holds the todo took it from a queue with a
``max_in_flight`` (docs/decisions/0028-queue-limits.md, "Waiters rung when a slot frees").

Every claim sets it (true only when the claim locked its queue's limited settings row, which it
already reads), and it is read back, never written, by the statements that end a hold
(complete, fail, release, reject, cancel, bulk cancel, reap, the deadline sweep): only then do
they announce a queue-wide ``rung`` so that the agents waiting on the full queue claim again.
A queue without that limit pays nothing: no probe of ``queue_settings`` when a hold ends.

A boolean with a constant default: adding it rewrites no row (PostgreSQL 11+).
"""

from django.db import migrations, models

ADD = "ALTER TABLE todos ADD COLUMN holds_limited_slot boolean NOT NULL DEFAULT false;"
DROP = "ALTER TABLE todos DROP COLUMN holds_limited_slot;"


class Migration(migrations.Migration):
    dependencies = [("todos", "0019_todo_forgotten")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(ADD, DROP)],
            state_operations=[
                migrations.AddField(
                    model_name="todo",
                    name="holds_limited_slot",
                    field=models.BooleanField(db_default=False, default=False, editable=False),
                ),
            ],
        ),
    ]
