"""Webhook intake: one delivery becomes one event and a todo per matching rule.

``receive`` is the only writer of ``events``. The order of checks is the order of the answers:
unknown source (404), then the signature (a bad one is stored as ``rejected``, 401, without its
body: only its size, SHA-256 and first bytes, escaped and masked; past the source's rate of
rejected deliveries, 429 and nothing stored), then the source's rate, counting only deliveries
that passed their signature (429, nothing stored), then the body (not JSON: 400, nothing stored),
then idempotency (an accepted delivery id seen before on this source: a ``duplicate`` event,
200, nothing created), then routing (202).

Concurrency: the event is inserted first, with ``ON CONFLICT DO NOTHING`` on the partial unique
index ``events_source_delivery_uniq``, inside the transaction that creates the todos. Two copies
of one delivery racing each other meet on that index: the second waits for the first's commit
and then finds the id taken (duplicate), or for its rollback and then takes it. So a delivery id
is routed at most once per source, and an event and its todos commit together. The todos are
created by ``todos.lifecycle.create``, whose NOTIFY rings the doorbell when that transaction
commits, never before.
"""

from __future__ import annotations

import hashlib
import secrets
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone
from psycopg.types.json import Jsonb

from switchboard.lib import jsonlimits, metrics, redact
from switchboard.lib.errors import InvalidInput
from switchboard.lib.sql import fetch_all, load
from switchboard.models import Endpoint
from switchboard.scope import routable_from
from todos import lifecycle
from todos.intake import routing
from todos.limits import TITLE_MAX_BYTES, WORK_ORDER_MAX_CHARS
from todos.models import Event, EventDisposition, SignatureScheme, Source

SQL_DIR = Path(__file__).parent / "sql"
INSERT_EVENT = load(SQL_DIR, "intake_event")
ORIGINAL_EVENT = load(SQL_DIR, "intake_original")

DELIVERY_ID_MAX_BYTES = 256
SLUG_MAX_CHARS = 200  # longer than any Source.slug; a longer one is not looked up
SECRET_PREFIX = "sbw_"  # noqa: S105 (a prefix that marks a secret, not one)
# What a rejected delivery keeps of its body, besides its size and SHA-256.
REJECTED_PREFIX_BYTES = 256


def new_secret(scheme: str = SignatureScheme.GITHUB) -> str:
    """A fresh webhook secret for ``scheme``: 32 random bytes, prefixed so scanners and people
    recognise it (``sbw_``; Standard Webhooks' own ``whsec_`` and base64, which its senders
    expect)."""
    if scheme == SignatureScheme.STANDARD_WEBHOOKS:
        return routing.new_standard_secret()
    return SECRET_PREFIX + secrets.token_urlsafe(32)


class IntakeError(Exception):
    """A delivery that is answered with an error; ``status`` and ``code`` go on the wire."""

    status = 400
    code = "invalid"

    def __init__(self, message: str, *, event_id: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.event_id = event_id


class UnknownSource(IntakeError):
    status = 404
    code = "unknown_source"


class BadSignature(IntakeError):
    status = 401
    code = "bad_signature"


class NotJson(IntakeError):
    status = 400
    code = "invalid_json"


class BadDeliveryId(IntakeError):
    status = 400
    code = "invalid_delivery_id"


class BadHeaders(IntakeError):
    status = 400
    code = "invalid_headers"


class TooLarge(IntakeError):
    status = 413
    code = "too_large"


class Throttled(IntakeError):
    """Over a rate: nothing is stored; the sender may redeliver after ``retry_after`` s."""

    status = 429
    code = "rate_limited"
    what = "deliveries"

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"too many {self.what}; redeliver after {retry_after} s")
        self.retry_after = retry_after


class RejectedTooOften(Throttled):
    """Over the source's rate of rejected deliveries."""

    what = "deliveries with a bad signature"


class SourceOverRate(Throttled):
    """Over the source's rate of deliveries that passed its signature."""

    what = "deliveries to this source"


# Given a source id, count one delivery against one of its rates: None while it is within it,
# else the seconds until another would be taken.
RejectedBudget = Callable[[int], int | None]
SourceBudget = Callable[[int], int | None]


@dataclass(frozen=True, slots=True)
class BodyEvidence:
    """What identifies a body that is not stored: size, SHA-256 (hex), the first bytes."""

    size: int
    sha256: str
    prefix: str


def body_evidence(body: bytes) -> BodyEvidence:
    """``body``'s size and SHA-256, and its first ``REJECTED_PREFIX_BYTES`` bytes as text:
    bytes that are not UTF-8 as ``\\xNN``, control and format characters (NUL, bidi overrides)
    as ``\\xNN``/``\\uNNNN`` (newline and tab kept), credentials masked (``redact.mask``)."""
    head = body[:REJECTED_PREFIX_BYTES].decode("utf-8", "backslashreplace")
    escaped = "".join(
        ch
        if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf")
        else ch.encode("unicode_escape").decode("ascii")
        for ch in head
    )
    prefix, _masked = redact.mask(escaped)
    return BodyEvidence(len(body), hashlib.sha256(body).hexdigest(), prefix)


@dataclass(frozen=True, slots=True)
class Delivery:
    """What a delivery became: the answer's body (status 202, or 200 for a duplicate)."""

    event_id: int
    disposition: str
    todo_ids: tuple[str, ...]
    duplicate_of: int | None = None

    @property
    def status(self) -> int:
        return 200 if self.disposition == EventDisposition.DUPLICATE else 202

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "event_id": self.event_id,
            "disposition": self.disposition,
            "todo_ids": list(self.todo_ids),
        }
        if self.duplicate_of is not None:
            body["duplicate_of"] = self.duplicate_of
        return body


def receive(
    source_slug: str,
    body: bytes,
    headers: Iterable[tuple[str, str]],
    *,
    content_type: str = "application/json",
    rejected_budget: RejectedBudget | None = None,
    source_budget: SourceBudget | None = None,
) -> Delivery:
    """Take one delivery to ``POST /hooks/{source_slug}``; raise an ``IntakeError`` subclass for
    every answer but 200/202. ``headers`` are the request's headers as (name, value) pairs;
    ``rejected_budget`` (the hook view's rate limit) is asked before a rejected delivery is
    stored, and without one every rejected delivery is stored. ``source_budget`` (the source's
    rate) is asked only once the signature passed: a stranger's unsigned or forged posts spend
    the rejected budget and their own address's, never the budget the real sender delivers
    under."""
    # A slug PostgreSQL cannot compare (NUL, a lone surrogate) names no source: asking would be
    # a data error, which must not read as an outage.
    unusable = jsonlimits.text_problem(source_slug) or len(source_slug) > SLUG_MAX_CHARS
    source = None if unusable else Source.objects.filter(slug=source_slug).first()
    if source is None:
        raise UnknownSource(f"no webhook source {source_slug!r}")
    pairs = list(headers)
    raw = {name.strip().lower(): value for name, value in pairs}
    kept = routing.stored_headers(pairs)
    if (reason := jsonlimits.problem(kept)) is not None:
        raise BadHeaders(f"a header {reason}")
    verification = _verify(source, body, raw)
    if not verification.ok:
        if rejected_budget is not None and (retry_after := rejected_budget(source.id)):
            metrics.rate_limited("hooks", "rejected")
            raise RejectedTooOften(retry_after)
        event_id = _store_rejected(source, kept, body_evidence(body), verification.detail)
        metrics.webhook_delivery(EventDisposition.REJECTED)
        raise BadSignature(_signature_message(verification.detail), event_id=event_id)
    if source_budget is not None and (retry_after := source_budget(source.id)):
        metrics.rate_limited("hooks", "source")
        raise SourceOverRate(retry_after)
    payload = parse_body(body, content_type)
    delivery_id = _delivery_id(raw, source.scheme)
    # A signature without a timestamp is the same for the same body: the body itself must be
    # new (migration todos.0018_events_signed_body).
    signed_body = (
        hashlib.sha256(body).hexdigest()
        if verification.detail.get("scheme") == "hmac-sha256"
        and verification.detail.get("result") == "valid"
        else None
    )

    plan = plan_for(source, kept, payload)
    with transaction.atomic():
        rows = fetch_all(
            INSERT_EVENT,
            {
                "source_id": source.id,
                "delivery_id": delivery_id,
                "body_sha256": signed_body,
                "headers": Jsonb(kept),
                "payload": Jsonb(payload),
                "verification": Jsonb(verification.detail),
                "disposition": EventDisposition.DROPPED,
                "routing_trace": Jsonb(plan.trace),
            },
        )
        if not rows:
            delivery = _store_duplicate(
                source, delivery_id, signed_body, kept, payload, verification.detail
            )
        else:
            delivery = _route(rows[0]["id"], plan, payload)
    metrics.webhook_delivery(delivery.disposition)
    return delivery


def plan_for(source: Source, headers: Mapping[str, str], payload: Any) -> routing.RoutingPlan:
    """How ``source``'s rules, in order, route a delivery with these stored headers: intake
    acts on it; the admin's and the Board's rule testers only show it."""
    routable = Endpoint.objects.filter(routable_from(source), pk=OuterRef("endpoint_id"))
    rules = [
        routing.RuleSpec.from_rule(rule, rule.routable)
        for rule in source.rules.select_related("endpoint")
        .annotate(routable=Exists(routable))
        .order_by("position", "id")
    ]
    return routing.plan(
        rules,
        headers,
        payload,
        source_slug=source.slug,
        title_max_bytes=TITLE_MAX_BYTES,
        work_order_max_chars=WORK_ORDER_MAX_CHARS,
    )


def _route(event_id: int, plan: routing.RoutingPlan, payload: Any) -> Delivery:
    """Create the plan's todos on the stored event and record what became of each rule."""
    todo_ids: list[str] = []
    # The rules' delays and windows count from the delivery's arrival.
    arrived = timezone.now()
    for planned in plan.todos:
        rule = planned.rule
        try:
            todo = lifecycle.create(
                rule.endpoint_id,
                queue=rule.queue,
                title=planned.title,
                payload=payload,
                work_order=planned.work_order,
                max_attempts=rule.max_attempts,
                event_id=event_id,
                routing_trace=planned.trace,
                **rule.todo_time(arrived, payload),
            )
        except InvalidInput as exc:
            # The endpoint was revoked since the rules were read, or the rule is out of bounds:
            # that rule creates nothing; the others still route.
            planned.trace["error"] = str(exc)
            continue
        planned.trace["todo_id"] = todo.id
        if todo.deduplicated:
            # The rule's dedupe key is held by an unfinished todo: that one stands for it.
            planned.trace["deduplicated"] = True
        todo_ids.append(todo.id)
    disposition = EventDisposition.ROUTED if todo_ids else EventDisposition.DROPPED
    # The trace entries gained todo ids (and maybe errors) since the insert; store the final one.
    Event.objects.filter(id=event_id).update(disposition=disposition, routing_trace=plan.trace)
    return Delivery(event_id, disposition, tuple(todo_ids))


def _store_rejected(
    source: Source, headers: dict[str, str], body: BodyEvidence, verification: dict[str, Any]
) -> int:
    # The delivery id is not kept: a rejected delivery must not hold (or look like) an accepted
    # one, and a sender that fixes its secret retries with the same id. Nor is the body: anyone
    # can send one, unauthenticated, and it would be kept for the retention period; its size,
    # digest and first bytes say which body it was.
    event = Event.objects.create(
        source=source,
        headers=headers,
        payload=None,
        body_size=body.size,
        body_sha256=body.sha256,
        body_prefix=body.prefix,
        verification=verification,
        disposition=EventDisposition.REJECTED,
        routing_trace=[],
    )
    return event.id


def _store_duplicate(
    source: Source,
    delivery_id: str | None,
    signed_body: str | None,
    headers: dict[str, str],
    payload: Any,
    verification: dict[str, Any],
) -> Delivery:
    original = fetch_all(
        ORIGINAL_EVENT,
        {"source_id": source.id, "delivery_id": delivery_id, "body_sha256": signed_body},
    )
    original_id = original[0]["id"] if original else None
    event = Event.objects.create(
        source=source,
        delivery_id=delivery_id,
        headers=headers,
        payload=payload,
        verification=verification,
        disposition=EventDisposition.DUPLICATE,
        routing_trace=[{"duplicate_of": original_id}],
    )
    return Delivery(event.id, EventDisposition.DUPLICATE, (), duplicate_of=original_id)


def _verify(source: Source, body: bytes, headers: Mapping[str, str]) -> routing.Verification:
    if source.verify and source.scheme == SignatureScheme.STANDARD_WEBHOOKS:
        return routing.verify_standard(
            source.secret,
            body,
            headers,
            now=time.time(),
            tolerance_seconds=settings.SWITCHBOARD_HOOK_TIMESTAMP_TOLERANCE_SECONDS,
        )
    return routing.verify_signature(source.secret, body, headers, required=source.verify)


def _delivery_id(headers: Mapping[str, str], scheme: str) -> str | None:
    # A Standard Webhooks source's id is the signed webhook-id, whatever else was sent.
    names = (
        (routing.STANDARD_ID,)
        if scheme == SignatureScheme.STANDARD_WEBHOOKS
        else routing.DELIVERY_HEADERS
    )
    for name in names:
        value = headers.get(name, "").strip()
        if value:
            if len(value.encode()) > DELIVERY_ID_MAX_BYTES or "\x00" in value:
                raise BadDeliveryId(
                    f"{name} must be at most {DELIVERY_ID_MAX_BYTES} bytes without NUL characters"
                )
            return value
    return None


def _signature_message(detail: Mapping[str, Any]) -> str:
    result = detail.get("result")
    if detail.get("scheme") == "standard-webhooks":
        return {
            "missing": "signature required: send webhook-id, webhook-timestamp and"
            " webhook-signature (Standard Webhooks)",
            "malformed": "signature malformed: expected webhook-timestamp in Unix seconds and"
            " webhook-signature as v1,<base64>",
            "timestamp_out_of_window": "webhook-timestamp is outside the accepted window"
            " (too old, or in the future): sign again with the current time",
        }.get(str(result), "no v1 signature matches the delivery and the source's secret")
    if result == "missing":
        return "signature required: send X-Signature-256 (or X-Hub-Signature-256): sha256=<hex>"
    if result == "malformed":
        return "signature malformed: expected sha256= and 64 hex digits"
    return "signature does not match the body and the source's secret"


# --- the body ------------------------------------------------------------------------------


def parse_body(body: bytes, content_type: str) -> Any:
    """The delivery's JSON, from a JSON body or GitHub's form encoding (``payload=<json>``).

    Raise ``NotJson`` for anything PostgreSQL's jsonb could not store or MCP could not answer:
    invalid UTF-8, non-finite numbers, NUL characters, lone surrogates, nesting deeper than
    ``jsonlimits.MAX_DEPTH`` (``switchboard.lib.jsonlimits``).
    """
    mime = content_type.split(";", 1)[0].strip().lower()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise NotJson("the body is not UTF-8") from None
    if mime == "application/x-www-form-urlencoded":
        try:
            fields = parse_qs(text, keep_blank_values=True, max_num_fields=100)
        except ValueError:  # more fields than max_num_fields
            raise NotJson("a form-encoded delivery has more than 100 fields") from None
        if "payload" not in fields:
            raise NotJson("a form-encoded delivery carries its JSON in a payload field")
        text = fields["payload"][0]
    try:
        value = routing.loads(text)
    except routing.NotStorableJson as exc:
        raise NotJson(f"the body {exc}") from None
    return value
