"""The one-column bounds of ``todo_attempts`` become domains (``switchboard/lib/domains.py``),
as ``todos``'s do (todos/migrations/0026_check_domains.py): every claim inserts an attempt and
every ending updates one, and a table CHECK is parsed and prepared again by each of those
statements. The rules over two columns (an attempt is open exactly while it has no outcome and
no disposition) stay table CHECKs. docs/decisions/0043-check-domains.md has the figures.
"""

from django.db import migrations

from switchboard.lib.domains import Domain, to_domains

OUTCOMES = (
    "'completed'::text, 'failed'::text, 'released'::text, 'lease_expired'::text, 'reaped'::text,"
    " 'canceled'::text, 'revoked'::text, 'timed_out'::text, 'budget_exceeded'::text"
)
DISPOSITIONS = (
    "'done'::text, 'retry_scheduled'::text, 'requeued'::text, 'dead_lettered'::text,"
    " 'canceled'::text"
)
DOMAINS = (
    Domain(
        "outcome",
        "attempt_outcome",
        "text",
        f"VALUE = ANY (ARRAY[{OUTCOMES}])",
        "todo_attempts_outcome_check",
    ),
    Domain(
        "disposition",
        "attempt_disposition",
        "text",
        f"VALUE = ANY (ARRAY[{DISPOSITIONS}])",
        "todo_attempts_disposition_check",
    ),
    Domain(
        "claimer_kind",
        "attempt_claimer_kind",
        "text",
        "VALUE = ANY (ARRAY['endpoint'::text, 'owner'::text])",
        "todo_attempts_claimer_kind_check",
    ),
    Domain(
        "claimant",
        "attempt_claimant",
        "text",
        "octet_length(VALUE) <= 128",
        "todo_attempts_claimant_check",
    ),
    Domain(
        "summary",
        "attempt_summary",
        "text",
        "octet_length(VALUE) <= 2048",
        "todo_attempts_summary_check",
    ),
    Domain(
        "artifact",
        "attempt_artifact",
        "text",
        "octet_length(VALUE) <= 512",
        "todo_attempts_artifact_check",
    ),
    Domain(
        "lease_token_hash",
        "attempt_token_hash",
        "bytea",
        "octet_length(VALUE) = 32",
        "todo_attempts_lease_token_hash_check",
    ),
    Domain(
        "trace_id",
        "attempt_trace_id",
        "bytea",
        "octet_length(VALUE) = 16",
        "todo_attempts_trace_id_length",
    ),
)
FORWARD, REVERSE = to_domains("todo_attempts", DOMAINS)


class Migration(migrations.Migration):
    dependencies = [("attempts", "0008_spans_stored")]

    operations = [migrations.RunSQL(FORWARD, REVERSE)]
