"""Read mirrors of ``todo_spans`` and ``todo_trace_bindings``: what agents' tracers sent.

A span row is one OTLP span bound to a todo (and, when it can be told, to one of its attempts);
a binding row records that a trace was bound to a todo by its ``switchboard.todo.id`` attribute,
so that later spans of the same trace follow it without the attribute. Both go with their todo
(ON DELETE CASCADE). Rows are written only by ``otlp.store`` (its SQL in ``otlp/sql/``); these
models serve reads and the admin. The tables, their CHECKs (byte caps, id lengths, the status
list, the size of ``attributes``) and their indexes are the hand-written SQL of
``migrations/0001_spans.py``; ``todo_spans`` is partitioned by the day of ``received_at`` since
``migrations/0006_partitioned_spans.py`` (its partitions: ``otlp/partitions.py``); ``StatusCode``
equals its CHECK list (``tests/otlp/test_admin_schema.py``).
The todo is referenced by name, so that ``todos`` can import this app's admin without a cycle.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now


class StatusCode(models.TextChoices):
    UNSET = "unset"
    OK = "ok"
    ERROR = "error"


# The CHECKs' byte caps, for the translator that cuts before inserting.
NAME_MAX_BYTES = 256
CATEGORY_MAX_BYTES = 64
TOOL_MAX_BYTES = 128
STATUS_MESSAGE_MAX_BYTES = 512
SERVICE_NAME_MAX_BYTES = 128
ATTRIBUTES_MAX_BYTES = 16_384
TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8


class TodoSpan(models.Model):
    # received_at is in the key because the table is partitioned by it (a unique index of a
    # partitioned table must hold its partition key); one span is still one row: the store
    # writes a re-sent span over its stored copy (docs/decisions/0040-span-partitions.md).
    pk = models.CompositePrimaryKey("todo", "trace_id", "span_id", "received_at")
    todo = models.ForeignKey(
        "todos.Todo", on_delete=models.CASCADE, db_column="todo_id", related_name="spans"
    )
    trace_id = models.BinaryField()
    span_id = models.BinaryField()
    parent_span_id = models.BinaryField(null=True, blank=True)
    # Not a foreign key: an attempt the per-todo cap prunes keeps its spans until the todo goes.
    attempt_seq = models.IntegerField(null=True, blank=True)
    name = models.TextField()
    kind = models.TextField()
    category = models.TextField()
    tool = models.TextField(null=True, blank=True)
    status_code = models.TextField(
        choices=StatusCode.choices, db_default=StatusCode.UNSET, default=StatusCode.UNSET
    )
    status_message = models.TextField(null=True, blank=True)
    service_name = models.TextField(null=True, blank=True)
    start_at = models.DateTimeField()
    end_at = models.DateTimeField()
    attributes = models.JSONField(db_default={}, default=dict)
    truncated = models.BooleanField(db_default=False, default=False)
    received_at = models.DateTimeField(db_default=Now())
    # A model call's usage (otlp/usage.py), NULL on every other span; cost_usd NULL on a model
    # call no price row covers (unpriced, never $0).
    model = models.TextField(null=True, blank=True)
    input_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    cache_read_tokens = models.BigIntegerField(null=True, blank=True)
    cache_write_tokens = models.BigIntegerField(null=True, blank=True)
    reasoning_tokens = models.BigIntegerField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=24, decimal_places=12, null=True, blank=True)

    class Meta:
        db_table = "todo_spans"
        ordering = ["todo_id", "attempt_seq", "start_at"]
        # Created by the migration's SQL, which names the query it serves; declared so the state
        # matches the database.
        indexes = [
            models.Index(fields=["todo", "attempt_seq", "start_at"], name="idx_todo_spans_attempt")
        ]

    def __str__(self) -> str:
        return f"{self.todo_id}/{bytes(self.trace_id).hex()}/{bytes(self.span_id).hex()}"


class TodoTraceBinding(models.Model):
    pk = models.CompositePrimaryKey("todo", "trace_id")
    todo = models.ForeignKey(
        "todos.Todo", on_delete=models.CASCADE, db_column="todo_id", related_name="trace_bindings"
    )
    trace_id = models.BinaryField()

    class Meta:
        db_table = "todo_trace_bindings"
        ordering = ["todo_id"]
        indexes = [models.Index(fields=["trace_id"], name="idx_todo_trace_bindings_trace")]

    def __str__(self) -> str:
        return f"{self.todo_id}/{bytes(self.trace_id).hex()}"


class TodoSpanCount(models.Model):
    """How many spans a todo stored for one attempt (``attempt_seq`` 0: with no attempt), ever:
    what the caps count (migrations/0007_span_counts.py). Written by ``otlp/sql/store.sql``
    only, under the todo's advisory lock; span retention leaves it as it is."""

    pk = models.CompositePrimaryKey("todo", "attempt_seq")
    todo = models.ForeignKey(
        "todos.Todo", on_delete=models.CASCADE, db_column="todo_id", related_name="span_counts"
    )
    attempt_seq = models.IntegerField()
    spans = models.IntegerField()

    class Meta:
        db_table = "todo_span_counts"
        ordering = ["todo_id", "attempt_seq"]

    def __str__(self) -> str:
        return f"{self.todo_id}#{self.attempt_seq}: {self.spans}"


class SpanRefusals(models.Model):
    """Spans an endpoint's exporters sent that were not stored, counted per minute and reason
    (migrations/0003): the fleet's "refused spans" over the last hour and day. Written by
    ``otlp/store.py`` only when a request refused some, so a clean export pays nothing."""

    pk = models.CompositePrimaryKey("endpoint", "minute")
    endpoint = models.ForeignKey(
        "switchboard.Endpoint", on_delete=models.CASCADE, related_name="span_refusals"
    )
    minute = models.DateTimeField()
    unbound = models.IntegerField(db_default=0, default=0)
    over_cap = models.IntegerField(db_default=0, default=0)
    invalid = models.IntegerField(db_default=0, default=0)

    class Meta:
        db_table = "span_refusals"
        ordering = ["endpoint_id", "minute"]

    def __str__(self) -> str:
        return f"{self.endpoint_id}/{self.minute:%Y-%m-%d %H:%M}"


PRICE_FIELDS = ("input", "output", "cache_read", "cache_write", "reasoning")


class Price(models.Model):
    """USD per million tokens of each type for a model (or a ``*`` pattern of models), from a
    date on; in effect until the next row of the same model and provider. An empty price is
    no price for that type: a span using it is unpriced. Written by ``otlp.prices`` (the
    command and the admin go through it); read by the ingest's price book."""

    model = models.TextField()
    provider = models.TextField(blank=True, db_default="", default="")
    effective_from = models.DateField()
    input = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    output = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    cache_read = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    cache_write = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    reasoning = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    source = models.TextField(blank=True, db_default="", default="")
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "prices"
        ordering = ["model", "provider", "effective_from"]
        constraints = [
            # Two rows of one model and provider from the same day would overlap: refused.
            models.UniqueConstraint(
                fields=["model", "provider", "effective_from"], name="prices_model_from_key"
            ),
            *(
                models.CheckConstraint(
                    condition=models.Q(**{f"{f}__gte": 0}) | models.Q(**{f"{f}__isnull": True}),
                    name=f"prices_{f}_not_negative",
                )
                for f in PRICE_FIELDS
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model} ({self.provider or 'any'}) from {self.effective_from}"


class UsageHour(models.Model):
    """Tokens and cost per endpoint, queue and UTC hour (by span start), added to by the
    ingest after each batch commits (``sql/rollup.sql``), rebuilt by ``manage.py reprice``.
    A day is the sum of its hours: the daily budgets and the Overview read these rows."""

    pk = models.CompositePrimaryKey("endpoint_id", "queue", "hour")
    endpoint = models.ForeignKey(
        "switchboard.Endpoint", on_delete=models.CASCADE, related_name="+", db_column="endpoint_id"
    )
    queue = models.TextField()
    hour = models.DateTimeField()
    input_tokens = models.BigIntegerField(db_default=0, default=0)
    output_tokens = models.BigIntegerField(db_default=0, default=0)
    cache_read_tokens = models.BigIntegerField(db_default=0, default=0)
    cache_write_tokens = models.BigIntegerField(db_default=0, default=0)
    reasoning_tokens = models.BigIntegerField(db_default=0, default=0)
    unpriced_tokens = models.BigIntegerField(db_default=0, default=0)
    cost_usd = models.DecimalField(max_digits=24, decimal_places=12, db_default=0, default=0)

    class Meta:
        db_table = "usage_hours"
        ordering = ["endpoint_id", "queue", "hour"]

    def __str__(self) -> str:
        return f"{self.endpoint_id}/{self.queue}/{self.hour:%Y-%m-%dT%H}"
