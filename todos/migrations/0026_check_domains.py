"""The one-column bounds of ``todos`` become domains (``switchboard/lib/domains.py``).

A CHECK on ``todos`` is parsed and prepared again by every statement that writes a row of it,
claims and completes included, and all of them are checked on every row; a domain's constraint
is prepared from the type cache and checked only on the columns a statement assigns. The rules
over several columns (deadlines in order, a finished todo is final, a claim holds a lease, a
retry only when failed, the lease's copy only while held) stay table CHECKs, as does the id's
pattern (the id is every other table's foreign key) and the cost cap's sign (a numeric with
its own precision). docs/decisions/0043-check-domains.md has the figures.

No row is rewritten: each column is relabelled to a domain without a constraint, then the
domain's constraint validates the rows as they stand.
"""

from django.db import migrations

from switchboard.lib.domains import Domain, to_domains

STATES = (
    "'pending'::text, 'claimed'::text, 'input-required'::text, 'auth-required'::text,"
    " 'completed'::text, 'failed'::text, 'canceled'::text, 'rejected'::text"
)
DOMAINS = (
    Domain("state", "todo_state", "text", f"VALUE = ANY (ARRAY[{STATES}])", "todos_state_check"),
    Domain(
        "queue",
        "todo_queue",
        "text",
        "VALUE <> ''::text AND octet_length(VALUE) <= 128",
        "todos_queue_check",
    ),
    Domain("title", "todo_title", "text", "octet_length(VALUE) <= 1024", "todos_title_check"),
    Domain(
        "dedupe_key",
        "todo_dedupe_key",
        "text",
        "octet_length(VALUE) >= 1 AND octet_length(VALUE) <= 256",
        "todos_dedupe_key_size",
    ),
    Domain(
        "priority",
        "todo_priority",
        "integer",
        "VALUE >= '-1000'::integer AND VALUE <= 1000",
        "todos_priority_range",
    ),
    Domain(
        "max_attempts",
        "todo_max_attempts",
        "integer",
        "VALUE >= 1 AND VALUE <= 1000",
        "todos_max_attempts_check",
    ),
    Domain(
        "lease_ttl_seconds",
        "todo_lease_ttl",
        "integer",
        "VALUE >= 10 AND VALUE <= 86400",
        "todos_lease_ttl_range",
    ),
    Domain(
        "run_timeout_seconds",
        "todo_run_timeout",
        "integer",
        "VALUE >= 10",
        "todos_run_timeout_min",
    ),
    Domain("attempt", "todo_count", "integer", "VALUE >= 0", "todos_attempt_check"),
    Domain("ring_attempts", "todo_count", "integer", "VALUE >= 0", "todos_ring_attempts_check"),
    Domain(
        "lease_token_hash",
        "todo_token_hash",
        "bytea",
        "octet_length(VALUE) = 32",
        "todos_lease_token_hash_check",
    ),
)
FORWARD, REVERSE = to_domains("todos", DOMAINS)


class Migration(migrations.Migration):
    dependencies = [("todos", "0025_start_by_first_claim")]

    operations = [migrations.RunSQL(FORWARD, REVERSE)]
