"""``todos_queue_not_before_idx``: a queue's scheduled pending todos by when they come due, for
the earliest ``not_before`` an empty claim reports (todos/sql/_earliest_not_before.sql).

Without it the planner took ``min(not_before)`` by walking ``todos_not_before_idx``
(``not_before`` alone, the sweeps' index) from now on and filtering endpoint and queue: an idle
poll read the endpoint's and every other endpoint's scheduled todos (90,909 rows, 220 ms,
beside 1,000,000 pending todos in ``bench/claims.py``). With endpoint and queue leading, the
minimum is one probe. Its last key is ``COALESCE(not_before, '-infinity')``, equal to
``not_before`` on these rows, so that the statement's minimum (of the same expression) can be
read in order from this index only. Only scheduled pending todos enter it, so a claim of a todo
without ``not_before`` writes nothing more.
"""

from django.db import migrations


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("todos", "0023_cost")]

    operations = [
        migrations.RunSQL(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS todos_queue_not_before_idx"
            " ON todos (endpoint_id, queue, (COALESCE(not_before, '-infinity'::timestamptz)))"
            " WHERE not_before IS NOT NULL AND state = 'pending'",
            "DROP INDEX CONCURRENTLY IF EXISTS todos_queue_not_before_idx",
        ),
    ]
