"""``todos_start_by_idx`` holds only the todos never claimed (``attempts_total = 0``).

``start_by`` bounds a todo's first claim only: one that was claimed in time and came back to
pending (a release, a reap, a due retry) stays claimable past it (todos/sql/_claimable.sql), and
the deadline sweep dead-letters only the pending todos nobody ever took (todos/sql/deadlines.sql,
docs/decisions/0027-time-and-cancellation.md). The sweep's index follows its predicate, so the
todos back to pending past their ``start_by`` are not walked on every pass.
"""

from django.db import migrations

OLD = "(start_by) WHERE start_by IS NOT NULL AND state = 'pending'"
NEW = "(start_by) WHERE start_by IS NOT NULL AND state = 'pending' AND attempts_total = 0"


def _build(predicate: str) -> list[str]:
    return [
        "DROP INDEX CONCURRENTLY IF EXISTS todos_start_by_idx",
        f"CREATE INDEX CONCURRENTLY todos_start_by_idx ON todos {predicate}",
    ]


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("todos", "0024_queue_not_before_idx")]

    operations = [migrations.RunSQL(_build(NEW), _build(OLD))]
