"""Alert channels, their rules, the alerts they raise and the messages sent for them.

A **channel** is owned by an operator or by a team (``switchboard.models.Owned``; its members
see and act on it, ``switchboard/scope.py``) and is a webhook (a Slack-compatible JSON body
signed the Standard Webhooks way) or an email address. Its **rules** say what it hears about:
one kind (``RuleKind``) on all of the endpoints its owner sees (``endpoint`` NULL: a human's
own and its teams', a team's own) or one, on every queue (``queue`` NULL) or one. An **alert**
is one rule firing for one subject (a todo, a queue, an endpoint, a budget day); a **delivery**
is one message about it (opened, resolved, or a test) on its way to the channel, with its tries.

``alerts/channels.py`` is the only writer of channels and rules (it also queues a test message
and fails a disabled channel's queued ones); the sweeper's alert step (``alerts/sweep.py`` over
``alerts/sql/``) writes alerts, their messages and the channels' circuit breakers. See
docs/guides/alerts.md.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.functions import RandomUUID
from django.db import models
from django.db.models.functions import Now

from switchboard.models import Endpoint, Owned


class ChannelKind(models.TextChoices):
    WEBHOOK = "webhook"
    EMAIL = "email"


class RuleKind(models.TextChoices):
    # Events: the alert is the message; nothing clears it (docs/guides/alerts.md).
    DEAD_LETTER = "dead_letter"
    DEADLINE_MISSED = "deadline_missed"
    # Conditions: open while they hold, resolved (one more message) when they clear.
    BUDGET_WARNING = "budget_warning"  # a daily budget 80 % spent
    BUDGET_EXCEEDED = "budget_exceeded"  # a daily budget 100 % spent
    DEPTH = "depth"  # more than `threshold` pending for `for_seconds`
    OLDEST_PENDING = "oldest_pending"  # a todo waiting longer than `for_seconds`
    SILENT_CLAIM = "silent_claim"  # a claim with no heartbeat for `for_seconds`
    PUSH_BREAKER = "push_breaker"  # the endpoint's push circuit breaker open


EVENT_KINDS = frozenset({RuleKind.DEAD_LETTER, RuleKind.DEADLINE_MISSED})
# What a new channel hears about until narrowed.
DEFAULT_KINDS = (
    RuleKind.DEAD_LETTER,
    RuleKind.DEADLINE_MISSED,
    RuleKind.BUDGET_WARNING,
    RuleKind.BUDGET_EXCEEDED,
)


class AlertState(models.TextChoices):
    PENDING = "pending"  # the condition holds, not yet for the rule's `for_seconds`: nothing sent
    OPEN = "open"
    RESOLVED = "resolved"
    EVENT = "event"  # an event's alert: sent once, nothing to resolve


class Message(models.TextChoices):
    OPENED = "opened"
    RESOLVED = "resolved"
    TEST = "test"


class DeliveryState(models.TextChoices):
    QUEUED = "queued"
    DELIVERED = "delivered"
    FAILED = "failed"


class AlertChannel(Owned):
    """Owned by a human or a team, exactly one (``alertchannel_owned_once``, alerts 0002)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.TextField(choices=ChannelKind.choices)
    name = models.TextField(blank=True, db_default="", default="")
    url = models.TextField(blank=True, db_default="", default="")
    email = models.TextField(blank=True, db_default="", default="")
    # Standard Webhooks: whsec_ and the base64 key; shown once, empty for email.
    secret = models.TextField(blank=True, db_default="", default="", editable=False)
    enabled = models.BooleanField(db_default=True, default=True)
    created_at = models.DateTimeField(db_default=Now())

    class Meta(Owned.Meta):
        db_table = "alert_channels"
        ordering = ["created_at", "id"]
        constraints = [
            *Owned.Meta.constraints,
            models.CheckConstraint(
                condition=(models.Q(kind="webhook") & ~models.Q(url=""))
                | (models.Q(kind="email") & ~models.Q(email="")),
                name="alert_channels_target",
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=ChannelKind.values), name="alert_channels_kind"
            ),
        ]

    def __str__(self) -> str:
        return self.name or (self.url if self.kind == ChannelKind.WEBHOOK else self.email)

    @property
    def target(self) -> str:
        return self.url if self.kind == ChannelKind.WEBHOOK else self.email


class AlertRule(models.Model):
    channel = models.ForeignKey(AlertChannel, on_delete=models.CASCADE, related_name="rules")
    kind = models.TextField(choices=RuleKind.choices)
    # NULL: every endpoint the channel's owner sees, now and later (a team's: the team's).
    endpoint = models.ForeignKey(
        Endpoint, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    queue = models.TextField(null=True, blank=True)
    threshold = models.IntegerField(null=True, blank=True)  # depth: more than this many pending
    for_seconds = models.IntegerField(db_default=0, default=0)
    enabled = models.BooleanField(db_default=True, default=True)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "alert_rules"
        ordering = ["channel", "id"]
        indexes = [models.Index(fields=["kind"], name="alert_rules_kind_idx")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(for_seconds__gte=0), name="alert_rules_for_seconds"
            ),
            models.CheckConstraint(
                condition=~models.Q(kind="depth") | models.Q(threshold__gte=0),
                name="alert_rules_depth_threshold",
                violation_error_message="depth needs a threshold N of 0 or more",
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=RuleKind.values), name="alert_rules_kind"
            ),
        ]

    def __str__(self) -> str:
        where = self.endpoint.slug if self.endpoint_id and self.endpoint else "all endpoints"
        if self.queue is not None:
            where += f"/{self.queue}"
        return f"{self.kind} on {where}"


class Alert(models.Model):
    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="alerts")
    channel = models.ForeignKey(AlertChannel, on_delete=models.CASCADE, related_name="alerts")
    kind = models.TextField(choices=RuleKind.choices)
    subject = models.TextField()
    endpoint = models.ForeignKey(
        Endpoint, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    queue = models.TextField(null=True, blank=True)
    # Not a key: an alert outlives its todo; retention sets it NULL (sweep.py's `unlink`).
    todo_id = models.TextField(null=True, blank=True)
    summary = models.TextField()
    detail = models.JSONField(db_default={}, default=dict)
    state = models.TextField(choices=AlertState.choices)
    since = models.DateTimeField(db_default=Now())  # when the condition was first seen
    opened_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "alerts"
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["channel", "-id"], name="alerts_channel_idx"),
            # Serves: resolve_alerts.sql, the live alerts of one kind.
            models.Index(
                fields=["kind"],
                condition=models.Q(state__in=["pending", "open"]),
                name="alerts_live_idx",
            ),
            # Serves: forgotten_alerts.sql (the alerts of the todos a forget erases or retention
            # deletes).
            models.Index(
                fields=["todo_id"],
                condition=models.Q(todo_id__isnull=False),
                name="alerts_todo_idx",
            ),
        ]
        constraints = [
            # One alert per rule and subject while it lasts: no storm.
            models.UniqueConstraint(
                fields=["rule", "subject"],
                condition=models.Q(state__in=["pending", "open", "event"]),
                name="alerts_one_live",
            ),
            models.CheckConstraint(
                condition=models.Q(state__in=AlertState.values), name="alerts_state"
            ),
            # Open (or fired) means opened_at is set; resolved means resolved_at is.
            models.CheckConstraint(
                condition=models.Q(state="pending") | models.Q(opened_at__isnull=False),
                name="alerts_opened_at",
            ),
            models.CheckConstraint(
                condition=~models.Q(state="resolved") | models.Q(resolved_at__isnull=False),
                name="alerts_resolved_at",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.subject} ({self.state})"


class AlertDelivery(models.Model):
    alert = models.ForeignKey(
        Alert, on_delete=models.CASCADE, null=True, blank=True, related_name="deliveries"
    )
    channel = models.ForeignKey(AlertChannel, on_delete=models.CASCADE, related_name="deliveries")
    message = models.TextField(choices=Message.choices)
    # The webhook-id: the same on every try, so a receiver can drop a duplicate.
    message_id = models.UUIDField(db_default=RandomUUID(), default=uuid.uuid4, unique=True)
    state = models.TextField(
        choices=DeliveryState.choices, db_default=DeliveryState.QUEUED, default=DeliveryState.QUEUED
    )
    tries = models.IntegerField(db_default=0, default=0)
    status_code = models.IntegerField(null=True, blank=True)
    error = models.TextField(blank=True, db_default="", default="")
    duration_ms = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    next_try_at = models.DateTimeField(db_default=Now())
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "alert_deliveries"
        verbose_name_plural = "alert deliveries"
        ordering = ["-id"]
        indexes = [
            models.Index(
                fields=["next_try_at"],
                condition=models.Q(state="queued"),
                name="alert_deliveries_due_idx",
            ),
            models.Index(fields=["channel", "-id"], name="alert_deliveries_channel_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(message__in=Message.values), name="alert_deliveries_message"
            ),
            models.CheckConstraint(
                condition=models.Q(state__in=DeliveryState.values), name="alert_deliveries_state"
            ),
            # A test message has no alert; every other names one.
            models.CheckConstraint(
                condition=models.Q(message="test") | models.Q(alert__isnull=False),
                name="alert_deliveries_alert",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.message} {self.message_id}"


class AlertCircuit(models.Model):
    """A channel's circuit breaker, as ``push_circuits`` is an endpoint's (todos/push.py)."""

    channel = models.OneToOneField(
        AlertChannel, on_delete=models.CASCADE, primary_key=True, related_name="circuit"
    )
    failures = models.IntegerField(db_default=0, default=0)
    open_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "alert_circuits"

    def __str__(self) -> str:
        return f"circuit of {self.channel_id}"
