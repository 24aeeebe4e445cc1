"""Read mirrors of ``todos``, ``events``, ``sources`` and ``rules`` (docs/architecture.md).

The tables, their CHECKs and their indexes are created by hand-written SQL in this app's
migrations; the models mirror them for reads, admin and factories. Nothing here writes a todo's
state: ``todos.lifecycle`` is the only writer of ``todos`` and ``todo_attempts``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any, Self

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models.functions import Now
from django.utils import timezone
from django.utils.text import capfirst

from switchboard.lib.errors import InvalidInput
from switchboard.lib.text import signed_whole_number
from switchboard.models import Endpoint, Human, Owned, slug_validator
from switchboard.scope import routable_from
from todos import limits, states
from todos.intake import routing
from todos.states import State  # also importable from here, as before


class EventDisposition(models.TextChoices):
    ROUTED = "routed"
    DROPPED = "dropped"
    REJECTED = "rejected"
    DUPLICATE = "duplicate"


class SignatureScheme(models.TextChoices):
    """How a verifying source's deliveries are signed (todos/intake/routing.py)."""

    # X-Hub-Signature-256 / X-Signature-256: sha256=<hex HMAC of the body>.
    GITHUB = "github"
    # webhook-id, webhook-timestamp, webhook-signature: v1,<base64 HMAC of id.timestamp.body>.
    STANDARD_WEBHOOKS = "standard-webhooks"


class Source(Owned):
    """A webhook source at ``POST /hooks/{slug}``, checked with its secret when ``verify``;
    owned by a human or a team (``switchboard.models.Owned``)."""

    slug = models.SlugField(max_length=64, unique=True, validators=[slug_validator])
    name = models.TextField()
    secret = models.TextField(blank=True, editable=False)
    verify = models.BooleanField(db_default=True, default=True)
    # Fixed at creation, like the slug: the secret's form depends on it.
    scheme = models.TextField(
        choices=SignatureScheme.choices,
        db_default=SignatureScheme.GITHUB,
        default=SignatureScheme.GITHUB,
    )
    created_at = models.DateTimeField(db_default=Now())

    class Meta(Owned.Meta):
        db_table = "sources"
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Rule(models.Model):
    """A routing rule: events of ``source`` matching ``match`` become todos on endpoint/queue."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="rules")
    position = models.IntegerField(db_default=0, default=0)
    name = models.TextField(blank=True, db_default="", default="")
    endpoint = models.ForeignKey(Endpoint, on_delete=models.PROTECT, related_name="rules")
    queue = models.TextField()
    match = models.JSONField(db_default={}, default=dict, blank=True)
    title_template = models.TextField(blank=True, db_default="", default="")
    work_order_template = models.TextField(blank=True, db_default="", default="")
    max_attempts = models.IntegerField(db_default=5, default=5)
    enabled = models.BooleanField(db_default=True, default=True)
    created_at = models.DateTimeField(db_default=Now())
    # Time on the todos it creates, relative to the delivery's arrival (migrations/0015): a
    # delay (not_before), start and finish windows (start_by, finish_by), a priority, a run
    # timeout, and the payload path (dotted, as in ``match``) its dedupe key is read from.
    priority = models.IntegerField(db_default=0, default=0)
    delay_seconds = models.IntegerField(null=True, blank=True)
    start_within_seconds = models.IntegerField(null=True, blank=True)
    finish_within_seconds = models.IntegerField(null=True, blank=True)
    run_timeout_seconds = models.IntegerField(null=True, blank=True)
    dedupe_key_path = models.TextField(null=True, blank=True)
    # The cost cap of the todos it creates (None: their queue's default).
    max_cost_usd = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)

    class Meta:
        db_table = "rules"
        ordering = ["source", "position", "id"]

    def __str__(self) -> str:
        # An unnamed rule is numbered as the Board and ``create_rule`` number rules: by its
        # position, the order it is tried in, with its id, since positions may tie
        # (``rule #10 (id 7)``; routing.rule_called).
        return routing.rule_called(self.name, self.position, self.pk)

    @property
    def label(self) -> str:
        """The rule as a sentence names it: ``rule “CI failures”``, or ``rule #10 (id 7)``
        unnamed."""
        return f"rule “{self.name}”" if self.name else str(self)

    def clean(self) -> None:
        """Refuse what intake could not route: a bad match, a foreign or revoked endpoint, a
        queue or budget outside the schema's bounds. Admin, the Board and ``create_rule`` call
        this through ``full_clean``."""
        errors: dict[str, str] = {}
        try:
            routing.parse_match(self.match)
        except routing.InvalidMatch as exc:
            errors["match"] = str(exc)
        # On the admin's "add source" page the rules' source is not saved yet (no source_id),
        # but it is set, with its owner, before the rules are validated.
        source = self.source if Rule.source.is_cached(self) or self.source_id else None
        if self.endpoint_id is not None and source is not None:
            endpoint = self.endpoint
            if not Endpoint.objects.filter(routable_from(source), pk=endpoint.pk).exists():
                errors["endpoint"] = "Choose an endpoint the source's owner owns."
            elif endpoint.revoked_at is not None:
                errors["endpoint"] = "This endpoint is revoked; todos for it are refused."
        try:
            # The lifecycle's own check, plus no spaces around the name (a rule is typed in).
            queue = limits.check_queue(self.queue)
            queue_ok = queue == queue.strip()
        except InvalidInput:
            queue_ok = False
        if not queue_ok:
            errors["queue"] = (
                f"A queue is 1 to {limits.QUEUE_MAX_BYTES} bytes,"
                " without spaces around it or controls."
            )
        errors |= self._time_errors()
        if errors:
            raise ValidationError(errors)

    def clean_fields(self, exclude: Any = None) -> None:
        """Django's field checks, except for the numbers the rule bounds itself
        (``_OWN_CHECKS``): each of those says one thing, the rule's bound, not Django's
        validator beside it ("Ensure this value is less than or equal to 2147483647." before
        "at most a year", "“NaN” value must be a decimal number." before "US dollars"). The
        command, the Board's form and the admin all come through here (``full_clean``)."""
        skipped = set(exclude or ())
        errors: dict[str, Any] = {}
        try:
            super().clean_fields(exclude=skipped | set(_OWN_CHECKS))
        except ValidationError as exc:
            errors = exc.update_error_dict(errors)
        for name, message in self._own_errors().items():
            if name not in skipped and name not in errors:
                errors[name] = [message]
        if errors:
            raise ValidationError(errors)

    def _own_errors(self) -> dict[str, str]:
        """The numbers ``_OWN_CHECKS`` bounds, each read (to an int, or Decimal for the cap)
        and set on the rule when it is within its bound, else its one message."""
        errors: dict[str, str] = {}
        for name, (low, high, message) in _OWN_CHECKS.items():
            value = getattr(self, name)
            if value is None or value == "":
                if name in ("max_attempts", "priority"):
                    errors[name] = message
                else:
                    setattr(self, name, None)
                continue
            if name == "max_cost_usd":
                try:
                    setattr(self, name, limits.check_cost(name, value))
                except InvalidInput as exc:
                    errors[name] = _sentence(str(exc).split(": ", 1)[-1])
                continue
            number = _whole(value)
            if number is None or not low <= number <= high:
                errors[name] = message
            else:
                setattr(self, name, number)
        return errors

    def _time_errors(self) -> dict[str, str]:
        """The rule's time as ``limits.check_time`` would take it for a delivery arriving now:
        the order of its windows, named by the rule's fields. Each number's own bound is
        ``clean_fields``' (``_own_errors``): with one of them out, the order is not judged."""
        errors: dict[str, str] = {}
        if self.dedupe_key_path is not None:
            try:
                routing.check_path(self.dedupe_key_path)
            except routing.InvalidMatch as exc:
                errors["dedupe_key_path"] = str(exc)
        if errors or self._own_errors():
            return errors
        now = timezone.now()
        try:
            time = self.todo_time(now)
            limits.check_cost("max_cost_usd", time.pop("max_cost_usd"))
            limits.check_time(**time, now=now - dt.timedelta(seconds=1))
        except InvalidInput as exc:
            field = _RULE_FIELD.get(exc.field, exc.field)
            errors[field] = self._time_said(str(exc).split(": ", 1)[-1])
        return errors

    def _time_said(self, message: str) -> str:
        """``check_time``'s refusal in the rule's words: the order it names between two of a
        todo's instants (``must not be after finish_by``) is one between two of the rule's
        windows, named as its form labels them and as the field is called (``Must not be more
        than “Finish within seconds” (finish_within_seconds).``)."""
        later = message.removeprefix("must not be after ")
        if later == message or later not in _RULE_FIELD:
            return _sentence(message)
        name = _RULE_FIELD[later]
        field = self._meta.get_field(name)
        assert isinstance(field, models.Field)
        return f"Must not be more than “{capfirst(field.verbose_name)}” ({name})."

    def todo_time(self, arrived: dt.datetime, payload: Any = None) -> dict[str, Any]:
        """``lifecycle.create``'s time arguments for a delivery that arrived at ``arrived``;
        the dedupe key is the payload's value at ``dedupe_key_path`` (a scalar, as text, or
        its digest: ``payload_dedupe_key``), none when the path is missing or holds an object or
        a list."""

        def after(seconds: int | None) -> dt.datetime | None:
            return None if seconds is None else arrived + dt.timedelta(seconds=seconds)

        key = None
        if self.dedupe_key_path is not None and payload is not None:
            value = routing.lookup(payload, self.dedupe_key_path)
            if isinstance(value, str | int | float | bool) and value != "":
                key = payload_dedupe_key(value if isinstance(value, str) else json.dumps(value))
        return {
            "priority": self.priority,
            "not_before": after(self.delay_seconds),
            "start_by": after(self.start_within_seconds),
            "finish_by": after(self.finish_within_seconds),
            "run_timeout_seconds": self.run_timeout_seconds,
            "dedupe_key": key,
            "max_cost_usd": self.max_cost_usd,
        }


def payload_dedupe_key(value: str) -> str:
    """The dedupe key a payload's value makes: the value itself when it is a key
    (``limits.check_name``: at most ``DEDUPE_KEY_MAX_BYTES``, no control characters), else
    ``sha256:`` and its digest's hex, so a long or multi-line value (a URL, a commit message)
    still deduplicates its deliveries instead of failing the rule."""
    try:
        return limits.check_name("dedupe_key", value, limits.DEDUPE_KEY_MAX_BYTES)
    except InvalidInput:
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
        return f"sha256:{digest}"


# The rule's numbers it bounds itself (``Rule.clean_fields``): the lowest, the highest, and
# the one thing a refusal says. The cap is ``limits.check_cost``'s, in its words.
_WINDOW = "A positive number of seconds (at most a year)."
_OWN_CHECKS: dict[str, tuple[int, int, str]] = {
    "max_attempts": (1, limits.MAX_ATTEMPTS_LIMIT, f"Between 1 and {limits.MAX_ATTEMPTS_LIMIT}."),
    "priority": (
        limits.PRIORITY_MIN,
        limits.PRIORITY_MAX,
        f"Between {limits.PRIORITY_MIN} and {limits.PRIORITY_MAX}.",
    ),
    "delay_seconds": (1, 366 * 24 * 3600, _WINDOW),
    "start_within_seconds": (1, 366 * 24 * 3600, _WINDOW),
    "finish_within_seconds": (1, 366 * 24 * 3600, _WINDOW),
    "run_timeout_seconds": (
        limits.RUN_TIMEOUT_MIN_SECONDS,
        limits.RUN_TIMEOUT_MAX_SECONDS,
        f"Must be between {limits.RUN_TIMEOUT_MIN_SECONDS} and"
        f" {limits.RUN_TIMEOUT_MAX_SECONDS} seconds.",
    ),
    "max_cost_usd": (0, 0, ""),
}


def _whole(value: Any) -> int | None:
    """A rule's number as given: an int (not a bool), or its text in ASCII digits."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return signed_whole_number(value.strip())
    return None


def _sentence(message: str) -> str:
    """A lifecycle refusal (``must have at most 6 decimals``) as the rule's messages read:
    ``Must have at most 6 decimals.``"""
    text = capfirst(message) or ""
    return text if text.endswith(".") else f"{text}."


# A todo's time field as the rule names the setting behind it.
_RULE_FIELD = {
    "not_before": "delay_seconds",
    "start_by": "start_within_seconds",
    "finish_by": "finish_within_seconds",
}


class Event(models.Model):
    """One webhook delivery as received, with how it was verified and routed."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="events")
    received_at = models.DateTimeField(db_default=Now())
    delivery_id = models.TextField(null=True, blank=True)
    headers = models.JSONField(db_default={}, default=dict)
    payload = models.JSONField(null=True, blank=True)
    verification = models.JSONField(db_default={}, default=dict)
    disposition = models.TextField(choices=EventDisposition.choices)
    routing_trace = models.JSONField(db_default=[], default=list)
    # A rejected delivery keeps no payload, only what identifies its body: its size in bytes,
    # its SHA-256 (hex) and its first bytes, escaped and masked (todos/intake/deliveries.py).
    body_size = models.IntegerField(null=True, blank=True)
    body_sha256 = models.TextField(null=True, blank=True)
    body_prefix = models.TextField(null=True, blank=True)

    class Meta:
        db_table = "events"
        ordering = ["-received_at", "-id"]

    def __str__(self) -> str:
        return f"event {self.pk}"


class TodoQuerySet(models.QuerySet["Todo"]):
    """``Todo.objects``: the state predicates as filters. Each agrees with its SQL fragment
    (``tests/todos/test_states.py``)."""

    def claimable(self) -> Self:
        """What a claim would take now (ignoring ``assignee``, which depends on the claimer).

        Agrees with todos/sql/_claimable.sql::

            (t.not_before IS NULL OR t.not_before <= now())
            AND (t.finish_by IS NULL OR t.finish_by > now())
            AND ((t.state = 'pending'
                  AND (t.start_by IS NULL OR t.start_by > now() OR t.attempts_total > 0))
            OR (t.state = 'claimed' AND t.lease_expires_at < now() AND t.attempt < t.max_attempts)
            OR (t.state = 'failed' AND t.next_retry_at IS NOT NULL AND t.next_retry_at <= now()
                AND t.attempt < t.max_attempts))
        """
        return self.filter(states.claimable_q())

    def in_flight(self) -> Self:
        """Held by an agent, its lease running or held awaiting input. Agrees with
        todos/sql/_in_flight.sql::

        t.state IN ('claimed', 'input-required', 'auth-required')
        """
        return self.filter(states.in_flight_q())

    def dead_lettered(self) -> Self:
        """Failed with no retry scheduled. Agrees with todos/sql/_dead_letter.sql::

        t.state = 'failed' AND t.next_retry_at IS NULL
        """
        return self.filter(states.dead_letter_q())

    def unfinished(self) -> Self:
        """Pending, in flight, or failed awaiting a retry: what cancel and endpoint revocation
        take. Agrees with todos/sql/_unfinished.sql::

            t.state = 'pending'
            OR (t.state IN ('claimed', 'input-required', 'auth-required') AND <current attempt>)
            OR (t.state = 'failed' AND t.next_retry_at IS NOT NULL)
        """
        return self.filter(states.unfinished_q())

    def finished(self) -> Self:
        """Done for good: ``finished_at IS NOT NULL`` (retention_todos.sql reads the same)."""
        return self.filter(states.finished_q())


class Todo(models.Model):
    id = models.TextField(primary_key=True)
    endpoint = models.ForeignKey(Endpoint, on_delete=models.PROTECT, related_name="todos")
    queue = models.TextField()
    title = models.TextField(db_default="", default="")
    event = models.ForeignKey(
        Event, on_delete=models.SET_NULL, null=True, blank=True, related_name="todos"
    )
    payload = models.JSONField(db_default={}, default=dict)
    work_order = models.TextField(db_default="", default="", blank=True)
    routing_trace = models.JSONField(null=True, blank=True)
    assignee = models.TextField(null=True, blank=True)
    state = models.TextField(choices=State.choices, db_default=State.PENDING, default=State.PENDING)
    owner = models.TextField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    attempt = models.IntegerField(db_default=0, default=0)
    max_attempts = models.IntegerField(db_default=5, default=5)
    claimed_at = models.DateTimeField(null=True, blank=True)
    next_retry_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())
    finished_at = models.DateTimeField(null=True, blank=True)
    last_ringed_at = models.DateTimeField(null=True, blank=True)
    ring_attempts = models.IntegerField(db_default=0, default=0)
    input_request = models.JSONField(null=True, blank=True)
    # Added with attempt history: every claim ever made, and how many attempt rows the
    # per-todo cap has pruned. seq of an attempt = attempts_total after its claim.
    attempts_total = models.IntegerField(db_default=0, default=0)
    attempts_pruned = models.IntegerField(db_default=0, default=0)
    # Copies of the held lease's attempt, so a heartbeat reads one row (migrations/0003): the
    # fence digest (NULL when unfenced) and when the attempt's last_heartbeat_at was last written.
    lease_token_hash = models.BinaryField(null=True, blank=True, editable=False)
    attempt_heartbeat_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The last seq handed to one of the todo's todo_activity rows (migrations/0004).
    activity_seq = models.BigIntegerField(db_default=0, default=0)
    # Spans refused once the todo held its span cap (migrations/0005, otlp/store.py).
    spans_dropped = models.IntegerField(db_default=0, default=0)
    # Time on the todo (migrations/0015, docs/decisions/0027-time-and-cancellation.md): claim
    # order, not claimable before not_before, dead-lettered unclaimed at start_by or unfinished
    # at finish_by, a lease never past claimed_at + run_timeout_seconds; one unfinished todo
    # per endpoint and dedupe_key.
    priority = models.IntegerField(db_default=0, default=0)
    not_before = models.DateTimeField(null=True, blank=True)
    start_by = models.DateTimeField(null=True, blank=True)
    finish_by = models.DateTimeField(null=True, blank=True)
    run_timeout_seconds = models.IntegerField(null=True, blank=True)
    dedupe_key = models.TextField(null=True, blank=True)
    # Set when a human erased the todo's content (activity/forget.py): the tombstone's when and
    # who (an Actor spelling). Migration todos.0019_todo_forgotten.
    forgotten_at = models.DateTimeField(null=True, blank=True)
    forgotten_by = models.TextField(null=True, blank=True)
    # Its claim took it from a queue with a max_in_flight (migrations/0020): when the hold ends,
    # the queue's waiting agents are rung (docs/decisions/0028-queue-limits.md).
    holds_limited_slot = models.BooleanField(db_default=False, default=False, editable=False)
    # The lease TTL the current claim chose, which a heartbeat naming none extends by
    # (migrations/0022).
    lease_ttl_seconds = models.IntegerField(null=True, blank=True, editable=False)
    # The label the current claim's agent sent, if any (migrations/0022).
    claimant = models.TextField(null=True, blank=True, editable=False)
    # The todo's cost cap: past it, the sweep ends its attempt budget_exceeded and dead-letters
    # it (todos/sql/over_cap.sql). NULL: no cap.
    max_cost_usd = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)

    # Token usage and cost of the todo's model calls, kept by the OTLP ingest (otlp/store.py),
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

    # The state predicates as filters: Todo.objects.claimable(), .unfinished(), … (todos/states.py)
    objects = TodoQuerySet.as_manager()

    class Meta:
        db_table = "todos"
        # Indexes and CHECKs are in migrations/0001_base_schema.py, each naming its query.
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.id

    @property
    def dead_letter(self) -> bool:
        """Failed with no retry scheduled: it runs again only if a human retries it."""
        return states.is_dead_letter(self)

    @property
    def run_deadline(self) -> dt.datetime | None:
        """When the current run must end (``states.run_deadline``)."""
        return states.run_deadline(self)


class TodoSearch(models.Model):
    """The text a Board search reads of a todo, ``todo_search_text(id, title, payload)``
    (migrations/0014): written once by the statement that creates the todo
    (``todos/sql/create.sql``), gone with it. A read mirror, for the foreign key and the flush.
    """

    todo = models.OneToOneField(
        Todo, on_delete=models.CASCADE, primary_key=True, related_name="search"
    )
    text = models.TextField()

    class Meta:
        db_table = "todo_search"

    def __str__(self) -> str:
        return f"search text of {self.todo_id}"


class PushState(models.TextChoices):
    QUEUED = "queued"
    DELIVERED = "delivered"
    FAILED = "failed"


class PushAttempt(models.Model):
    """One push ring to an endpoint's ``push_url``, its tries and the last answer (migrations/0007).

    Queued by the ring statements, sent and recorded by the sweeper (``todos/push.py``) through
    ``todos.lifecycle``; a read mirror here, for the Board and the admin.
    """

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="push_attempts")
    todo = models.ForeignKey(
        Todo, on_delete=models.CASCADE, null=True, blank=True, related_name="push_attempts"
    )
    ring_id = models.UUIDField(unique=True)
    queue = models.TextField(db_default="", default="")
    reason = models.TextField()
    state = models.TextField(
        choices=PushState.choices, db_default=PushState.QUEUED, default=PushState.QUEUED
    )
    tries = models.IntegerField(db_default=0, default=0)
    status_code = models.IntegerField(null=True, blank=True)
    error = models.TextField(db_default="", default="", blank=True)
    duration_ms = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    next_try_at = models.DateTimeField(db_default=Now())
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "push_attempts"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"push {self.ring_id}"


class PauseActor(models.TextChoices):
    """Who paused or resumed a queue: a human (the Board, ``manage.py queue --as``) or the
    system (``manage.py queue`` without ``--as``)."""

    HUMAN = "human"
    SYSTEM = "system"


class QueuePause(models.Model):
    """A pause of an endpoint's queue (migrations/0011): open while ``resumed_at`` is NULL.

    While open, no agent's claim takes a todo of the queue (``todos/sql/_queue_open.sql``) and
    no ring goes out for it; leases already held run on. Written by ``todos.lifecycle``
    (``pause_queue``, ``resume_queue``); kept after the resume as the record of both.
    """

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="queue_pauses")
    queue = models.TextField()
    paused_at = models.DateTimeField(db_default=Now())
    paused_by_kind = models.TextField(choices=PauseActor.choices)
    paused_by = models.TextField()
    resumed_at = models.DateTimeField(null=True, blank=True)
    resumed_by_kind = models.TextField(choices=PauseActor.choices, null=True, blank=True)
    resumed_by = models.TextField(null=True, blank=True)
    # A budget's pause (reason 'queue_budget' or 'endpoint_budget') carries ``until``, the next
    # UTC midnight, when the sweeper lifts it (todos/sql/lift_pauses.sql); NULL for a human's.
    reason = models.TextField(null=True, blank=True)
    until = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "queue_pauses"
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "queue"],
                condition=models.Q(resumed_at__isnull=True),
                name="queue_pauses_open_idx",
            )
        ]

    def __str__(self) -> str:
        return f"{self.queue} paused {self.paused_at:%Y-%m-%d %H:%M}"


class MissedPolicy(models.TextChoices):
    """What a schedule does with ticks that passed while no sweeper ran (todos/schedules.py)."""

    SKIP = "skip"  # create nothing for them; jump to the next future tick
    RUN_ONCE = "run_once"  # create one todo for all of them, then jump


# A cron as todos/schedules.check_cron stores it: five fields, single spaces between them.
FIVE_FIELD_CRON = r"^\S+( \S+){4}$"


class Schedule(models.Model):
    """A cron schedule that creates a todo on ``endpoint``'s ``queue`` at each tick.

    Written only by ``todos.schedules`` (the admin, the Board and ``manage.py schedule`` call it);
    the sweeper fires due ticks through ``todos.schedules.fire_due``. It has no owner of its
    own: it is owned through its endpoint, so whoever sees the endpoint (its owner, or every
    member of its team: ``switchboard/scope.py``) sees and acts on it, and moving the endpoint
    into a team moves it. ``next_run_at`` is the tick the sweeper fires next (NULL while
    paused); the fire step moves it with a conditional UPDATE, so a tick fires once.
    """

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="schedules")
    queue = models.TextField()
    title_template = models.TextField()
    payload_template = models.JSONField(db_default={}, default=dict, blank=True)
    work_order_template = models.TextField(blank=True, db_default="", default="")
    # The todo's own fields: deadlines are seconds after the tick.
    priority = models.IntegerField(db_default=0, default=0)
    start_within_seconds = models.IntegerField(null=True, blank=True)
    finish_within_seconds = models.IntegerField(null=True, blank=True)
    run_timeout_seconds = models.IntegerField(null=True, blank=True)
    max_attempts = models.IntegerField(db_default=5, default=5)
    cron = models.TextField()
    timezone = models.TextField(db_default="UTC", default="UTC")
    enabled = models.BooleanField(db_default=True, default=True)
    next_run_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    missed = models.TextField(
        choices=MissedPolicy.choices, db_default=MissedPolicy.SKIP, default=MissedPolicy.SKIP
    )
    # NULL: created by the system (manage.py without --as).
    created_by = models.ForeignKey(
        Human, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "schedules"
        ordering = ["id"]
        indexes = [
            # Serves the fire step's "due schedules" scan (todos/schedules.py fire_due).
            models.Index(
                fields=["next_run_at"],
                condition=models.Q(enabled=True),
                name="schedules_due_idx",
            )
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(missed__in=MissedPolicy.values), name="schedules_missed_check"
            ),
            # A paused schedule has no next run; an enabled one always has one.
            models.CheckConstraint(
                condition=models.Q(enabled=False) | models.Q(next_run_at__isnull=False),
                name="schedules_enabled_next_run",
            ),
            # An enabled schedule's cron has five fields, as todos/schedules.check_cron stores
            # it: cronsim reads a sixth (seconds) first, which fires on every sweeper pass.
            models.CheckConstraint(
                condition=models.Q(enabled=False) | models.Q(cron__regex=FIVE_FIELD_CRON),
                name="schedules_enabled_five_fields",
            ),
        ]

    def __str__(self) -> str:
        return f"schedule {self.pk} ({self.cron})"


class ScheduleRun(models.Model):
    """One fired tick of a schedule: the todo it created, or why it created none.

    ``(schedule, tick)`` is unique: a second fire of one tick fails at the database even if the
    fire step's conditional UPDATE were bypassed. ``todo`` goes NULL when retention deletes it.
    """

    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="runs")
    tick = models.DateTimeField()
    fired_at = models.DateTimeField(db_default=Now())
    # Retention deletes todos in SQL (todos/retention.py): the database clears the link.
    todo = models.ForeignKey(
        Todo, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # How many passed ticks this run stood for (run_once after downtime), 1 otherwise; 0 for a
    # run-now, which is no tick of the cron.
    ticks = models.IntegerField(db_default=1, default=1)
    error = models.TextField(blank=True, db_default="", default="")

    class Meta:
        db_table = "schedule_runs"
        ordering = ["-tick", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["schedule", "tick"], name="schedule_runs_once"),
        ]

    def __str__(self) -> str:
        return f"run of schedule {self.schedule_id} at {self.tick:%Y-%m-%d %H:%M}"


class QueueSettings(models.Model):
    """An endpoint's queue's limits and default run timeout (migrations/0016), a row only once
    an operator sets one (docs/decisions/0028-queue-limits.md).

    Every agent's claim honours ``max_in_flight`` and ``claims_per_minute``
    (``todos/sql/_queue_limits.sql``). Written only by ``todos.lifecycle.set_queue_limits``
    (and the claims spending its tokens); the admin edits through that writer.
    """

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="queue_settings")
    queue = models.TextField()
    max_in_flight = models.IntegerField(null=True, blank=True)
    claims_per_minute = models.IntegerField(null=True, blank=True)
    tokens = models.FloatField(db_default=0)
    refilled_at = models.DateTimeField(db_default=Now())
    run_timeout_seconds = models.IntegerField(null=True, blank=True)
    # The cost cap of the queue's todos that set none; the queue's daily budget (UTC day), past
    # which the sweeper pauses it until the next day (todos/budgets.py).
    default_max_cost_usd = models.DecimalField(
        max_digits=14, decimal_places=6, null=True, blank=True
    )
    daily_budget_usd = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    updated_at = models.DateTimeField(db_default=Now())
    updated_by = models.TextField()

    class Meta:
        db_table = "queue_settings"
        verbose_name_plural = "queue settings"
        ordering = ["endpoint", "queue"]
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "queue"], name="queue_settings_queue_key")
        ]

    def __str__(self) -> str:
        return f"{self.queue} limits"
