"""mcp_streams_open: how many subscription streams each server process holds open, per endpoint.

A subscription stream (``subscriptions/listen``, or a legacy session's GET stream) lives in the
memory of the process serving it, and the Board may be served by any other; so each process
writes its own counts here (``mcp_server.presence``): one row per endpoint it has streams for,
rewritten when one opens or closes and refreshed while any stay open. The Board sums the rows
refreshed recently (``todos/sql/fleet.sql``); a process that died without deleting its rows
stops refreshing them, so they stop counting, and the next write of any process deletes them.
The primary key (endpoint_id first) serves both the Board's read and the writer's upsert.
``endpoint_id`` is not a foreign key, as in mcp_subscriptions (0001_subscriptions.py): Django's
test flush truncates the endpoints table without this one.

Hand-written: there is no model (only raw SQL touches the table).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("mcp", "0001_subscriptions")]

    operations = [
        migrations.RunSQL(
            """
            CREATE TABLE mcp_streams_open (
                endpoint_id uuid        NOT NULL,
                process_id  uuid        NOT NULL,
                streams     int         NOT NULL CHECK (streams > 0),
                seen_at     timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (endpoint_id, process_id)
            );
            """,
            "DROP TABLE mcp_streams_open;",
        )
    ]
