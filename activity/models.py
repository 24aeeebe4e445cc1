"""Read mirror of ``todo_activity``: what happened to a todo that no other table records.

Agents' progress notes, Board actions, retries, A2A transitions and doorbell rings, one row each,
numbered per todo by ``seq`` (allocated from ``todos.activity_seq`` by the statement that writes
the row, under the todo's row lock). Rows are written only by the lifecycle statements in
``todos/sql/``; this model serves reads, admin and factories. The table, its CHECKs and its
indexes are the hand-written SQL of ``migrations/0001_todo_activity.py`` and
``migrations/0005_endpoint.py``; the ``TextChoices``
below equal its CHECK lists (``tests/activity/test_schema.py``). The todo is referenced by name,
so that ``todos`` can import this app's admin without an import cycle.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

from switchboard.models import Endpoint


class Kind(models.TextChoices):
    NOTE = "note"
    HUMAN_ACTION = "human_action"
    RETRIED = "retried"
    A2A_STATE = "a2a_state"
    RUNG = "rung"
    # The sweeper dead-lettered the todo: its start_by or finish_by passed (detail.reason).
    DEADLINE = "deadline"
    # The sweep dead-lettered the todo: its cost passed its max_cost_usd (detail.cost_usd).
    BUDGET = "budget"


class ActorKind(models.TextChoices):
    ENDPOINT = "endpoint"
    HUMAN = "human"
    SYSTEM = "system"


# The CHECKs' byte caps, for the writers that cut before inserting.
ACTOR_REF_MAX_BYTES = 128
MESSAGE_MAX_BYTES = 512
DETAIL_MAX_BYTES = 4096


class TodoActivity(models.Model):
    pk = models.CompositePrimaryKey("todo", "seq")
    # CASCADE here as in the table (ON DELETE CASCADE): the trail goes with its todo.
    todo = models.ForeignKey(
        "todos.Todo", on_delete=models.CASCADE, db_column="todo_id", related_name="activity"
    )
    seq = models.BigIntegerField()
    # A copy of the todo's endpoint, which never changes, so the Activity feed walks a human's
    # endpoints' rows alone (migrations/0005_endpoint.py). No foreign key of its own: the
    # todo's keeps the endpoint.
    endpoint = models.ForeignKey(
        Endpoint,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        editable=False,
        related_name="+",
    )
    # The attempt the row happened in; not a foreign key: an attempt the per-todo cap prunes
    # keeps its notes until the todo goes.
    attempt_seq = models.IntegerField(null=True, blank=True)
    at = models.DateTimeField(db_default=Now())
    kind = models.TextField(choices=Kind.choices)
    actor_kind = models.TextField(choices=ActorKind.choices)
    actor_ref = models.TextField()
    message = models.TextField(null=True, blank=True)
    truncated = models.BooleanField(db_default=False, default=False)
    detail = models.JSONField(db_default={}, default=dict)

    class Meta:
        db_table = "todo_activity"
        ordering = ["todo_id", "seq"]
        verbose_name = "todo activity"
        verbose_name_plural = "todo activity"
        # Created by the migration's SQL (each names its query there); declared so the state
        # matches the database.
        indexes = [
            models.Index(
                fields=["todo", "attempt_seq"],
                condition=models.Q(kind="note"),
                name="idx_todo_activity_note",
            ),
            models.Index(
                fields=["endpoint", "-at"],
                condition=~models.Q(kind="rung"),
                name="idx_todo_activity_feed",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.todo_id}#{self.seq}"
