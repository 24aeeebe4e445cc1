"""Read mirrors of ``todo_spans`` and ``todo_trace_bindings``: what agents' tracers sent.

A span row is one OTLP span bound to a todo (and, when it can be told, to one of its attempts);
a binding row records that a trace was bound to a todo by its ``switchboard.todo.id`` attribute,
so that later spans of the same trace follow it without the attribute. Both go with their todo
(ON DELETE CASCADE). Rows are written only by ``otlp.store`` (its SQL in ``otlp/sql/``); these
models serve reads and the admin. The tables, their CHECKs (byte caps, id lengths, the status
list, the size of ``attributes``) and their indexes are the hand-written SQL of
``migrations/0001_spans.py``; ``StatusCode`` equals its CHECK list (``tests/otlp/test_schema.py``).
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
    pk = models.CompositePrimaryKey("todo", "trace_id", "span_id")
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
