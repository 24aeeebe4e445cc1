"""mcp_subscriptions: legacy-era ``resources/subscribe`` state that every process can see.

A legacy client subscribes with a POST and hears the doorbell on its GET stream, and the two
may land on different server processes. The process holding the GET stream looks the
subscriptions up here when a ring for the stream's endpoint arrives (``mcp_server.doorbell``),
so a subscribe answered by any process takes effect at once. Sessions have no server-side end,
so rows carry ``seen_at`` (refreshed whenever the session opens its GET stream or subscribes)
and old ones are pruned when a session subscribes. The table stays small (one row per live
session and queue), so it needs no index beyond its primary key. ``endpoint_id`` is not a
foreign key: Django's test flush truncates the endpoints table without this one, and a row of
a deleted endpoint is harmless (no stream of that endpoint can exist) until it is pruned.

Hand-written: there is no model (only raw SQL touches the table).
"""

from django.db import migrations


class Migration(migrations.Migration):
    initial = True

    dependencies = [("switchboard", "0001_initial")]

    operations = [
        migrations.RunSQL(
            """
            CREATE TABLE mcp_subscriptions (
                session_id  text        NOT NULL,
                uri         text        NOT NULL,
                endpoint_id uuid        NOT NULL,
                created_at  timestamptz NOT NULL DEFAULT now(),
                seen_at     timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (session_id, uri)
            );
            """,
            "DROP TABLE mcp_subscriptions;",
        )
    ]
