"""A signed body is accepted once per source: a replay under a new delivery id is a duplicate.

A GitHub-style signature (``sha256=`` HMAC of the body, no timestamp) is the same for the same
body, so a captured delivery could be posted again under a new ``X-GitHub-Delivery`` id and
pass. Accepted deliveries verified that way now keep their body's SHA-256 (``body_sha256``, which
only rejected ones kept before), and this index lets one accepted event per source hold it: the
intake insert meets it as it meets the delivery-id index (todos/intake/sql/intake_event.sql).
The window is the events' retention: once the original event is deleted, the body is new again.
"""

from django.db import migrations

FORWARD = """
CREATE UNIQUE INDEX events_source_signed_body_uniq ON events (source_id, body_sha256)
    WHERE body_sha256 IS NOT NULL AND disposition IN ('routed', 'dropped');
"""

BACKWARD = "DROP INDEX events_source_signed_body_uniq;"


class Migration(migrations.Migration):
    dependencies = [("todos", "0017_schedules")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
