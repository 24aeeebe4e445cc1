"""The claim index keyed by queue: ``todos_claim_queue_idx`` replaces ``todos_claimable_idx``.

``claim_next`` always names its queues, and ``todos_claimable_idx`` (endpoint_id, created_at,
id) made it walk the endpoint's claimable rows oldest first, filtering by queue as it went: with
20,000 older todos pending on one queue, a claim on another queue read all of them first
(50-110 ms instead of 1.5 ms), and an idle poll grew with the backlog of queues it did not ask
for. ``todos_claim_queue_idx`` (endpoint_id, queue, created_at, id), partial on the same
claimable rows, gives each requested queue's head in claim order, so the claim reads only its
own queues (``todos/sql/claim_next.sql``, docs/decisions/0013-claim-per-queue.md).

It replaces the old index rather than joining it: nothing else reads ``todos_claimable_idx``
(a claim by id goes through the primary key), and every claim writes one entry into each claim
index, since the claimed row stays claimable for a takeover. The columns are the same kind as
before plus ``queue``, which no transition changes, so no update that was HOT stops being HOT.

Not in one transaction (``atomic = False``): both indexes are built and dropped
``CONCURRENTLY``, so claims and intake go on while it runs. The new index is built before the old
one goes, so claims always have one of them. A run that fails part way leaves an ``INVALID``
index behind; run it again (``IF NOT EXISTS`` / ``IF EXISTS``) after dropping that index.
"""

from django.db import migrations

CLAIMABLE = (
    "WHERE state IN ('pending','claimed') OR (state = 'failed' AND next_retry_at IS NOT NULL)"
)

CREATE_PER_QUEUE = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS todos_claim_queue_idx"
    f" ON todos (endpoint_id, queue, created_at, id) {CLAIMABLE}"
)
DROP_PER_QUEUE = "DROP INDEX CONCURRENTLY IF EXISTS todos_claim_queue_idx"
CREATE_PER_ENDPOINT = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS todos_claimable_idx"
    f" ON todos (endpoint_id, created_at, id) {CLAIMABLE}"
)
DROP_PER_ENDPOINT = "DROP INDEX CONCURRENTLY IF EXISTS todos_claimable_idx"


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("todos", "0005_spans_dropped")]

    operations = [
        migrations.RunSQL(CREATE_PER_QUEUE, DROP_PER_QUEUE),
        migrations.RunSQL(DROP_PER_ENDPOINT, CREATE_PER_ENDPOINT),
    ]
