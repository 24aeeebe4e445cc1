"""Read mirror of ``todo_attempts``: one row per committed claim.

Rows are opened and closed only by the lifecycle statements in ``todos/sql/``; this model serves
reads, admin and factories. The primary key is ``(todo_id, seq)``; Django addresses the row
through that composite key.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

from switchboard.models import Endpoint


class ClaimerKind(models.TextChoices):
    ENDPOINT = "endpoint"
    OWNER = "owner"


class Outcome(models.TextChoices):
    COMPLETED = "completed"
    FAILED = "failed"
    RELEASED = "released"
    LEASE_EXPIRED = "lease_expired"
    REAPED = "reaped"
    CANCELED = "canceled"
    REVOKED = "revoked"
    # Its todo's finish_by or its run timeout passed while it was open (the sweeper closed it).
    TIMED_OUT = "timed_out"
    # Its todo's cost passed its max_cost_usd while it was open (the sweep closed it).
    BUDGET_EXCEEDED = "budget_exceeded"


class Disposition(models.TextChoices):
    DONE = "done"
    RETRY_SCHEDULED = "retry_scheduled"
    REQUEUED = "requeued"
    DEAD_LETTERED = "dead_lettered"
    CANCELED = "canceled"


# An attempt "died" when its lease ended without its holder reporting.
DIED_OUTCOMES = (Outcome.LEASE_EXPIRED, Outcome.REAPED)


class TodoAttempt(models.Model):
    pk = models.CompositePrimaryKey("todo_id", "seq")
    todo = models.ForeignKey("todos.Todo", on_delete=models.DO_NOTHING, related_name="attempts")
    seq = models.IntegerField()
    # A copy of the todo's endpoint, which never changes, so the Activity feed walks a human's
    # endpoints' endings alone (migrations/0007_endpoint.py). Not the claimer: an owner's claim
    # has no claimer_endpoint. No foreign key of its own: the todo's keeps the endpoint.
    endpoint = models.ForeignKey(
        Endpoint,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        editable=False,
        related_name="+",
    )
    attempt = models.IntegerField()
    claimer_kind = models.TextField(choices=ClaimerKind.choices)
    claimer_endpoint = models.ForeignKey(
        Endpoint,
        on_delete=models.DO_NOTHING,
        null=True,
        blank=True,
        db_constraint=False,
        related_name="+",
    )
    claimer_session = models.TextField(null=True, blank=True)
    owner = models.TextField()
    claimant = models.TextField(null=True, blank=True)
    claimed_at = models.DateTimeField(db_default=Now())
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    outcome = models.TextField(choices=Outcome.choices, null=True, blank=True)
    disposition = models.TextField(choices=Disposition.choices, null=True, blank=True)
    summary = models.TextField(null=True, blank=True)
    summary_truncated = models.BooleanField(db_default=False, default=False)
    artifact = models.TextField(null=True, blank=True)
    lease_token_hash = models.BinaryField(null=True, blank=True, editable=False)
    # Progress notes refused once the attempt held its cap of notes (migrations/0002_activity).
    notes_dropped = models.IntegerField(db_default=0, default=0)
    # The attempt's trace (16 bytes): the claim's traceparent, or one minted for it; spans of
    # this trace bind to this attempt. Spans refused once the attempt held its span cap are
    # counted in spans_dropped (migrations/0003_trace).
    trace_id = models.BinaryField(null=True, blank=True, editable=False)
    spans_dropped = models.IntegerField(db_default=0, default=0)
    # Spans the ingest stored for the attempt, ever (migrations/0008_spans_stored): span
    # retention and forgetting remove spans, never this count, so the trail can say what went.
    spans_stored = models.IntegerField(db_default=0, default=0)

    # Token usage and cost of the attempt's model calls, kept by the OTLP ingest (otlp/store.py),
    # never recomputed on read; cost_usd counts priced spans only, unpriced_tokens the rest.
    input_tokens = models.BigIntegerField(db_default=0, default=0, editable=False)
    output_tokens = models.BigIntegerField(db_default=0, default=0, editable=False)
    cache_read_tokens = models.BigIntegerField(db_default=0, default=0, editable=False)
    cache_write_tokens = models.BigIntegerField(db_default=0, default=0, editable=False)
    reasoning_tokens = models.BigIntegerField(db_default=0, default=0, editable=False)
    unpriced_tokens = models.BigIntegerField(db_default=0, default=0, editable=False)
    cost_usd = models.DecimalField(
        max_digits=24, decimal_places=12, db_default=0, default=0, editable=False
    )

    class Meta:
        db_table = "todo_attempts"
        ordering = ["todo_id", "-seq"]
        # Created CONCURRENTLY by migrations/0002_activity.py, 0003_trace.py,
        # 0004_endpoint_ended.py and 0007_endpoint.py, which name the queries they serve.
        indexes = [
            # The Overview's rollup's (todos/sql/overview_minutes.sql): its outcomes alone, so
            # the Activity feed never walks it (migrations/0007_endpoint.py).
            models.Index(
                fields=["-ended_at"],
                condition=models.Q(
                    ended_at__isnull=False,
                    outcome__in=["completed", "failed", "lease_expired", "reaped"],
                ),
                name="idx_todo_attempts_ended",
            ),
            models.Index(
                fields=["trace_id"],
                condition=models.Q(trace_id__isnull=False),
                name="idx_todo_attempts_trace",
            ),
            models.Index(
                fields=["claimer_endpoint", "ended_at"],
                condition=models.Q(ended_at__isnull=False),
                include=["outcome"],
                name="idx_todo_attempts_by_endpoint",
            ),
            models.Index(
                fields=["endpoint", "-ended_at"],
                condition=models.Q(ended_at__isnull=False),
                name="idx_todo_attempts_feed",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.todo_id}#{self.seq}"

    @property
    def died(self) -> bool:
        return self.outcome in DIED_OUTCOMES

    @property
    def is_open(self) -> bool:
        return self.ended_at is None
