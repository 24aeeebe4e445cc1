"""mcp_tasks: which key submitted which todo over MCP, for ``tasks/list``.

A task's id is its todo's id and its state is the todo's (todos/task_states.py), so nothing of a
task is kept here but what the todo does not know: the bearer that submitted it (its SHA-256,
as ``switchboard.auth`` hashes it: a key's, or another bearer's) and the time-to-live the
client asked for. ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` are scoped to the
endpoint (any of its keys); the 2025-11-25 ``tasks/list`` lists the calling key's own, newest
first, by keyset on (created_at, todo_id), which the index serves.

``todo_id`` and ``endpoint_id`` are not foreign keys, as in mcp_subscriptions
(0001_subscriptions.py): Django's test flush truncates those tables without this one. Every
read joins the todo in the endpoint's scope, and retention deletes a todo's row with the todo
(todos/sql/retention_todos.sql).

Hand-written: there is no model (only raw SQL touches the table).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("mcp", "0002_streams_open")]

    operations = [
        migrations.RunSQL(
            """
            CREATE TABLE mcp_tasks (
                todo_id     text        PRIMARY KEY,
                endpoint_id uuid        NOT NULL,
                key_digest  bytea       NOT NULL,
                ttl_ms      bigint      CHECK (ttl_ms IS NULL OR ttl_ms > 0),
                created_at  timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX mcp_tasks_by_key
                ON mcp_tasks (endpoint_id, key_digest, created_at DESC, todo_id DESC);
            """,
            "DROP TABLE mcp_tasks;",
        )
    ]
